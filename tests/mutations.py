"""What the mutation tests share (tests/harness/test_bad_input_mutations.py, tests/analysis/test_compare_trend_mutations.py)."""


def key_paths(data, prefix=()):
    """Every key path of a nested JSON or YAML value (mapping keys and list indices), the root included."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from key_paths(value, prefix + (key,))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from key_paths(value, prefix + (i,))
