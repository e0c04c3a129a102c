"""Training the project's own compact groundedness judge (a MiniLM cross-encoder + a small calibrated combiner).

data.py   readers for every file of the permissively licensed training pool, claim-level example construction,
          hard negatives, balancing, the held-out split
manifest.py  the data manifest (sha256 of every input, licences) and how a pool differs from a stage's record
train.py  the seeded recipe: fine-tuning (CUDA when torch sees it), the combiner fit on the held-out slice,
          compact fp16 export and its load/score check
cli.py    ``ragdoctor judge train``

Nothing here runs at import time and nothing is downloaded: the base weights are the bundled all-MiniLM-L6-v2.
"""
