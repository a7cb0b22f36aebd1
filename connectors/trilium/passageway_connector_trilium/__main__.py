from passageway_connector_trilium.connector import TriliumConnector

TriliumConnector.main()
