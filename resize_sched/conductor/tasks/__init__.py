"""Task flows the conductor runs; each module owns one flow."""
