"""The MCP tools passageway offers (``recall``, ``read``, ``status``) and the server's instructions.

Both MCP doors offer them: ``/mcp`` inside the server (:mod:`.mcp_transport`) and the stdio
bridge (``passageway mcp``, :mod:`.stdio_bridge`). Their names, descriptions and input schemas
live here, apart from either door, so the two cannot drift; ``PASSAGEWAY_TOOL_DESCRIPTION`` and
``PASSAGEWAY_INSTRUCTIONS`` replace the defaults below.
"""

from __future__ import annotations

from typing import Any

DEFAULT_INSTRUCTIONS = (
    "This server searches the user's own indexed sources (notes, wikis, documentation). "
    "Call `recall` with a question in natural language when the user asks about something those "
    "sources may cover. It returns up to three short passages with their title, place and link, "
    "or says that the sources have nothing relevant; it never writes an answer itself. "
    "Call `status` to see whether every source is indexed and healthy."
)
DEFAULT_TOOL_DESCRIPTION = (
    "Search the indexed sources for passages relevant to a question. Returns up to three short "
    "passages, each with its title, place in the source and link, or a note that nothing relevant "
    "is indexed. Ask a full question in natural language."
)
READ_DESCRIPTION = (
    "The rest of a passage that `recall` showed cut (…): the whole section, or the whole item, as "
    "indexed, up to 8,000 characters. Pass the source and item a recall answer named (its "
    "`source: item` line) and, for one section, the heading it was shown under."
)
STATUS_DESCRIPTION = (
    "The server's health report: whether each source is indexed, how many items it holds, and "
    "the error text of anything that fails."
)


def tool_list(tool_description: str = DEFAULT_TOOL_DESCRIPTION) -> list[Any]:
    """The tools, ``recall``, ``read`` and ``status``, as MCP tool definitions.

    Shared by the server's ``/mcp`` and the stdio bridge (``passageway mcp``), so both offer
    the same tools with the same arguments.
    """
    import mcp_types as types

    return [
        types.Tool(
            name="recall",
            description=tool_description,
            input_schema={
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, in natural language"},
                },
                "required": ["question"],
            },
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="read",
            description=READ_DESCRIPTION,
            input_schema={
                "type": "object",
                "properties": {
                    "source": {"type": "string", "description": "The source, as a recall answer named it"},
                    "item": {"type": "string", "description": "The item, as a recall answer named it"},
                    "section": {"type": "string",
                                "description": "Optional: the heading of one section (after the title's ›)"},
                },
                "required": ["source", "item"],
            },
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="status",
            description=STATUS_DESCRIPTION,
            input_schema={"type": "object", "properties": {}},
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
    ]
