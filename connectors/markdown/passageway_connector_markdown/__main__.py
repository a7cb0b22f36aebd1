"""``python -m passageway_connector_markdown <mode>``: run the markdown connector."""

from passageway_connector_markdown.connector import MarkdownConnector


def main() -> None:
    MarkdownConnector.main()


if __name__ == "__main__":
    main()
