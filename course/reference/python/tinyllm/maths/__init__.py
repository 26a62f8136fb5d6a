"""Math modules: M00.2 the 2D rotation of pairs."""
