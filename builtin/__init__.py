"""The default implementations of passageway's stages, registered as ordinary plugins.

``passageway.kernel.plugins.BUILTIN_PLUGINS`` lists them; each module or package here is one plugin.
"""
