"""The REST API (DRF, token authentication, OpenAPI schema at /api/schema/, docs at /api/docs/)."""
