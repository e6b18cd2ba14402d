"""``python without_extras.py ARGS...``: the ``tuner`` command as if only the core package
(``make main``'s install) were there: importing an extra's module fails as if not installed.
``python without_extras.py --imported`` prints the heavy modules that ``import tuner.cli``
loads, one per line."""

import importlib.abc
import runpy
import sys

EXTRAS = ("torch", "torchvision", "onnx", "fastapi", "uvicorn", "docker", "psycopg", "boto3",
          "botocore", "moto", "mlflow")  # fmt: skip
HEAVY = ("matplotlib", "pandas", "scipy", "sklearn", "skopt", "optuna", "httpx", *EXTRAS)


class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in EXTRAS:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
if sys.argv[1:] == ["--imported"]:
    import tuner.cli  # noqa: F401

    print("\n".join(sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))))
else:
    sys.argv = ["tuner", *sys.argv[1:]]
    runpy.run_module("tuner", run_name="__main__", alter_sys=True)
