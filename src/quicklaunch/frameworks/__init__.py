"""Framework integrations (torch, JAX). Imported only when used:
``quicklaunch.torch`` and ``quicklaunch.jax`` load them lazily."""
