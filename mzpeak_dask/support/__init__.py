"""Small helpers with no mass-spectrometry knowledge: paths as text, real paths, OS locks,
the C heap of encoding processes, Arrow arrays built from buffers."""
