"""The library's exception types; every error raised on purpose derives from TunerError."""


class TunerError(Exception):
    """Root of every error raised on purpose by the tuner."""


class ValidationError(TunerError, ValueError):
    """Bad input: the message states the rule that was broken and the offending value."""


class NotFoundError(TunerError, LookupError):
    """A named tuning job or training job does not exist in the store."""


class LaunchError(TunerError):
    """A training job could not be started (missing command, bad working directory, ...)."""


class StorageError(TunerError):
    """The store's database cannot be reached or opened (the message names it, password hidden)."""


class StoreUnavailable(StorageError):
    """The store's database stopped answering (a server restart, a network cut) and did not
    come back within the store's patience; nothing was written by the failed call."""


class NotResumable(ValidationError):
    """A tuning job cannot be resumed: it has ended, or another process holds its lease."""


class LeaseLost(TunerError):
    """Another process holds the tuning job's lease now (it took over after the lease ran out);
    the caller must leave the tuning job and its training jobs to that process."""


class LauncherUnavailable(LaunchError):
    """The launcher's engine or cluster controller did not answer (a Docker engine or slurmctld
    restarting): nothing was started or decided; the same call may succeed later."""


class LauncherFull(LauncherUnavailable):
    """The room ``free_slots`` offered (GPU slots, local job places) was taken by another tuner
    process meanwhile: nothing was started; the same start may succeed when room frees up."""
