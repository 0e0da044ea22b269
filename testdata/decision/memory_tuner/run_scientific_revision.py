# FIXTURE for cairn's tests: a stand-in for the file seed 003's protocol pins; it holds no real data.
# memory_tuner/run_scientific_revision.py
