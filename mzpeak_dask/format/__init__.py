"""The mzPeak format's own words: CV accessions and term names, members, buffer formats;
the PSI-MS and UO vocabularies."""
