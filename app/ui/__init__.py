"""The ops page at /ui: server-rendered HTML over the same services as the API."""
