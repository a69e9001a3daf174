"""From upstream CSV bytes to typed, validated rows."""
