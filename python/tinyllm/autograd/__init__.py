"""L0.1 Tensor and L0.2 functional ops: reverse-mode autograd over numpy."""
