"""The default implementations of passageway's stages, registered as ordinary plugins.

``passageway.kernel.plugins.BUILTIN_PLUGINS`` lists them; each module here is one plugin, but
``keyword_workers``, the worker processes the ``sqlite`` store ranks large keyword searches in.
"""
