# Production image: slim Python, runtime dependencies only, non-root, health-checked.
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
# Runtime extras only: no dev tools, no embedded servers (compose provides PostgreSQL and Redis).
RUN pip install . \
    && useradd --system --uid 10001 --home /srv skills \
    && chown -R skills /srv

USER skills
ENV HOST=0.0.0.0 PORT=8000 LOG_FORMAT=json
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2).status == 200 else 1)"

CMD ["python", "-m", "app", "serve"]
