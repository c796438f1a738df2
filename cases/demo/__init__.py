"""The bundled demo: corpus, demo target and sample cases."""
