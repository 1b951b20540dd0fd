"""Bad input: a scenario, a sweep file, a plan or a flag that cannot run. The CLI prints its one line and exits 2."""


class ScenarioError(ValueError):
    """An input that cannot run (a scenario, a sweep file, a plan, a flag); the message names the file and the field."""
