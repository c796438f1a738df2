"""The scoring engine's detector phrase lists, from settings (the engine itself reads none)."""

from django.conf import settings

from cases.scoring import DetectorConfig


def detector_config_from_settings() -> DetectorConfig:
    return DetectorConfig(
        refusal_phrases=tuple(settings.SCORING_REFUSAL_PHRASES),
        clarification_phrases=tuple(settings.SCORING_CLARIFICATION_PHRASES),
    )
