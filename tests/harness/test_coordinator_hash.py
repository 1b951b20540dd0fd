from faults.targets import java_string_hash, offsets_partition


def test_java_string_hash_matches_java():
    # Values of String.hashCode() in Java.
    assert java_string_hash("") == 0
    assert java_string_hash("hello world") == 1794106052
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE
    assert java_string_hash("é") == 233


def test_offsets_partition_uses_kafkas_abs():
    # Utils.abs is Math.abs except that Utils.abs(Integer.MIN_VALUE) is 0.
    assert offsets_partition("polygenelubricants", 50) == 0
    assert offsets_partition("payments-v2", 10) == 1539523300 % 10  # hashCode -1539523300: negated, not masked
    assert offsets_partition("chaos-group", 50) == 552550898 % 50
