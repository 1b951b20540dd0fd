"""`kafka-chaos validate` of a scenario text, as a new user would run it: the one line it refuses with (exit 2)."""
from harness.cli import main


def refused(tmp_path, capsys, yaml_text: str) -> str:
    """The error line of a scenario `validate` refuses: exit 2, one line, no traceback."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml_text)
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in out + err, err
    return err.strip()
