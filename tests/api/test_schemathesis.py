"""schemathesis against the running service's own OpenAPI document: no server error, and every
response matches the schema (status codes, content types, headers, bodies); requests that break
the schema are rejected.

Left out: schemathesis's "schema-valid data is accepted" check. A tuning job definition has
rules JSON Schema cannot state (the regex compiles, max_parallel_jobs <= max_jobs, the program is
allowed), and breaking them is answered with a 400 that names the rule, as it should be.
"""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.api.conftest import TOKEN

EXAMPLES_PER_OPERATION = 60


def test_the_api_holds_its_own_schema(server):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    headers = {"Authorization": f"Bearer {TOKEN}"}
    failures = []
    for operation in operations:

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: schemathesis.Case) -> None:
            params = dict(case.query or {})
            if case.path == "/training-jobs/{name}/logs":
                params.pop("follow", None)  # following streams until a job ends
                case.query = params
            case.call_and_validate(
                base_url=server.url,
                headers=headers,
                excluded_checks=[schemathesis.checks.positive_data_acceptance],
            )

        try:
            check()
        except Exception as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
