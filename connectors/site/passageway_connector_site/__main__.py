"""``python -m passageway_connector_site <mode>``: run the site connector."""

from passageway_connector_site.connector import SiteConnector


def main() -> None:
    SiteConnector.main()


if __name__ == "__main__":
    main()
