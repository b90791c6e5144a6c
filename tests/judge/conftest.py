"""The models tests' fixtures (real SDKs against the local fake servers), for the judge tests."""

from tests.models.conftest import provider, server_for  # noqa: F401  (pytest fixtures)
