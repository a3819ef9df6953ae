"""The echo server: a FastAPI application on the store's models, and the web reports."""
