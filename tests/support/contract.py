"""A small French insurance contract, article by article: the corpus of the retrieval tests that need real
passages and a real model but no dataset."""

E5 = "local:multilingual-e5-small"
CONTRACT_ARTICLES = {
    "declaration": "Article 5 - Déclaration du sinistre. L'assuré doit déclarer tout sinistre à l'assureur dans les "
    "cinq jours ouvrés suivant la date à laquelle il en a eu connaissance.",
    "franchise": "Article 8 - Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque "
    "dommage indemnisé, sauf catastrophe naturelle.",
    "exclusions": "Article 12 - Exclusions. Ne sont pas couverts les dommages intentionnels, la guerre et "
    "l'usure normale des biens.",
    "resiliation": "Article 15 - Résiliation. Le contrat peut être résilié chaque année à l'échéance avec un "
    "préavis de deux mois.",
    "prime": "Article 3 - Cotisation. La prime annuelle est payable d'avance ; un défaut de paiement entraîne "
    "la suspension des garanties.",
    "vol": "Article 9 - Vol. En cas de vol, la plainte doit être déposée dans les 48 heures auprès des autorités.",
}
