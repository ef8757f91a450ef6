"""The conductor: its RPC endpoints (``endpoints/``) and the flows behind them (``tasks/``)."""
