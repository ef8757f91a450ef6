"""Console scripts, one module per command, each with a short ``main()``."""
