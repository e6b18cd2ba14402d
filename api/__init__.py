"""The REST service: FastAPI routes, schemas and error mapping over the tuner engine."""
