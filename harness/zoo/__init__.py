"""The bug zoo: each known consumer-group bug run on the release that had it and on the one that fixed it."""
