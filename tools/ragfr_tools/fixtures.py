"""The French insurance contract and the two questions of the end-to-end checks (owui tests, cluster smoke).

Seven articles, several chunks: retrieval must pick the theft article for an inflected question ("déclarer un
vol" vs "déclare le vol"), and the off-domain question must find no evidence in it.
"""

CONTRACT = """Conditions générales de l'assurance habitation Sérénité

Article 1 - Objet du contrat. Le présent contrat garantit votre résidence principale contre l'incendie, \
les dégâts des eaux et les catastrophes naturelles reconnues par arrêté interministériel. Les dépendances \
situées à la même adresse sont couvertes lorsque leur surface est déclarée aux conditions particulières.

Article 2 - Déclaration des sinistres. Tout sinistre doit être déclaré à l'assureur par écrit dans un délai \
de cinq jours ouvrés à compter de sa découverte, par lettre recommandée ou sur l'espace client. Passé ce \
délai, l'assuré perd le bénéfice de la garantie si le retard a causé un préjudice à l'assureur.

Article 3 - Vol. En cas de vol, l'assuré dépose plainte auprès des autorités de police dans les vingt-quatre \
heures et déclare le vol à l'assureur dans un délai de deux jours ouvrés. Le vol de bijoux n'est couvert que \
si les objets étaient rangés dans un coffre-fort agréé et en cas d'effraction constatée par les autorités.

Article 4 - Franchise. Une franchise de 150 euros reste à la charge de l'assuré pour chaque événement, sauf \
en cas de catastrophe naturelle où la franchise légale s'applique. La franchise est déduite de l'indemnité.

Article 5 - Résiliation. Vous pouvez résilier le contrat chaque année à la date d'échéance, avec un préavis \
de deux mois, ou à tout moment après la première année, sans frais ni pénalités, par lettre ou par courriel.

Article 6 - Expertise. En cas de désaccord sur le montant des dommages, chaque partie désigne son expert ; \
si les experts ne s'accordent pas, ils en choisissent un troisième et les frais sont partagés par moitié.

Article 7 - Indemnisation. L'indemnité est versée dans les trente jours suivant l'accord des parties ou la \
décision de justice devenue définitive. Le mobilier est indemnisé en valeur à neuf pendant cinq ans.
"""
FILENAME = "conditions-generales.txt"
ANSWERABLE = "Dans quel délai dois-je déclarer un vol ?"
THEFT_SENTENCE = "déclare le vol à l'assureur dans un délai de deux jours ouvrés"
OFF_DOMAIN = "Quelle est la capitale du Pérou ?"
# Near the contract's topic, answered by none of its articles (it names no termites): the shipped e5 evidence
# gate's probability for it lies mid-way (in log-odds) between its caution and answer thresholds [0.157, 0.477]:
# 0.288 on the chunks Open WebUI's splitter makes of CONTRACT (ragfr_tools.eval.owui_chunking, searched as the
# chat searches; the same computation gives 0.407 for the question used before the 2026-12-06 refit, as the
# chat's gate log showed). Since the subject rule (ragfr.gate.subject: « termites » is in no passage, a strong
# absence) that caution is a refusal, which names the subject.
TERMITES = "Les dommages causés par les termites sont-ils couverts ?"
TERMITES_REASON = "Aucun des documents joints ne mentionne « termites »."
# What the browser test's caution step asks since the subject rule: the e5 gate alone answers it (p 0.82 on
# ragfr's chunks of CONTRACT: the jewels' article), but no passage names a car, so it is cautioned and the
# caution line names « voiture ». A refit that refuses it fails tests/owui/test_browser.py's caution step.
UNSURE = "Le vol de mes bijoux dans ma voiture est-il couvert ?"
UNSURE_REASON = "Aucun des documents joints ne mentionne « voiture »."
