"""Ready-made pipelines, grids and experiments; plain Python meant to be read and edited."""
