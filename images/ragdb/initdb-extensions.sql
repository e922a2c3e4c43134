-- Extensions ragfr's schema needs, created in the default database on first start of the official image.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS unaccent;
