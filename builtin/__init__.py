"""The default implementations of passageway's stages, registered as ordinary plugins.

``passageway.kernel.plugins.BUILTIN_PLUGINS`` lists them. Each is a subpackage (or, while small,
a module) that holds its own code and imports only the kernel, never another builtin:
``embedders``, ``ranking``, ``transport``, and the ``sqlite`` store in ``storage``: the four
stages. ``passageway index`` is the plugin distribution ``passageway-passage-index``
(``plugins/passage-index/``).
"""
