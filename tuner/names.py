"""The names of tuning jobs and training jobs: the one rule every door checks them by.

A tuning job's name is 1-63 letters, digits and hyphens, beginning with a letter or digit (as
SageMaker's, which allows 32); its training jobs are named ``<tuning job>-<number:03d>``.
"""

TUNING_JOB_NAME = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})$"
TRAINING_JOB_NAME = r"^[A-Za-z0-9][A-Za-z0-9-]{0,80}$"
TUNING_JOB_NAME_LENGTH = 63
TRAINING_JOB_NAME_LENGTH = 81
