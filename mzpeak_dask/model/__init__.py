"""What crosses from readers to encoders: format-neutral spectra and chromatograms, and a
run's paths (where this process reads and writes, and what the user named)."""
