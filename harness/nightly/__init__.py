"""The nightly: its verdict on a night (gate.py) and the fault families a night or a test session ran."""
