from passageway_embedder_openai.program import main

main()
