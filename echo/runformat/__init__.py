"""The run format: what a run directory and its plan hold, and the one reader and writer of each of its files (the
plan and run.json, record files, process status files, JUnit files), with the numbers C and Python share and the
option grammars the plan is written from. The bottom of the Python packages: it imports nothing else of echo."""
