-- ragfr 0002: the French text search configuration used by the lexical arm.
--
-- Decision (docs/decisions/0003-french-analysis.md): accents are FOLDED before stemming, so a query typed
-- without accents ("delai") meets the text that has them ("délai"): both become the same stem. Folding
-- first (rather than stemming first) guarantees that the accented and unaccented spellings of a word
-- always get the same lexeme. No stop list on the database side: stop words are dropped from the QUERY by
-- ragfr.analysis.french (a packaged list), so documents keep every token and their BM25 length is the
-- plain token count.
--
-- Tokenisation is made independent of PostgreSQL's default parser quirks (URLs, file paths, versions,
-- XML tags) by ragfr_fts_prepare: every run of characters that is not a letter or digit becomes one
-- space, so the parser only ever sees words and numbers. ragfr.analysis.french does the same split, which
-- is what makes the Python and SQL lexemes identical (tested on every PIAF token).
CREATE TEXT SEARCH DICTIONARY ragfr_unaccent (TEMPLATE = unaccent, RULES = 'unaccent');
CREATE TEXT SEARCH DICTIONARY ragfr_french_stem (TEMPLATE = snowball, Language = french);
CREATE TEXT SEARCH CONFIGURATION ragfr_french (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION ragfr_french
    ALTER MAPPING FOR asciiword, word WITH ragfr_unaccent, ragfr_french_stem;
ALTER TEXT SEARCH CONFIGURATION ragfr_french
    ALTER MAPPING FOR numword, int, uint WITH ragfr_unaccent, simple;
-- After ragfr_fts_prepare only the token types above can occur; the rest are dropped explicitly so a
-- surprise never produces a lexeme Python cannot reproduce.
ALTER TEXT SEARCH CONFIGURATION ragfr_french
    DROP MAPPING IF EXISTS FOR email, url, host, sfloat, version, file, float, url_path,
        asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart;

CREATE FUNCTION ragfr_fts_prepare(doc text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN regexp_replace(doc, '[^[:alnum:]]+', ' ', 'g');

CREATE FUNCTION ragfr_to_tsvector(doc text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('public.ragfr_french'::regconfig, ragfr_fts_prepare(coalesce(doc, '')));

-- BM25 needs the document length in tokens (not distinct lexemes): the sum of position counts.
CREATE FUNCTION ragfr_tsvector_token_count(v tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN (SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(v) AS u);
