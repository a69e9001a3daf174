"""The blocking checks of a publish and the regression watch over the snapshot it made."""
