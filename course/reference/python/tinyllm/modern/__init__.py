"""Modern transformer pieces: L7.3 RoPE and what follows."""
