// Syntax colouring without HTML: Prism's tokenizer gives a token tree, drawn as React elements, so
// agent-controlled text is never parsed as markup.
import Prism from "./prism";
import "prismjs/components/prism-clike";
import "prismjs/components/prism-javascript";
import "prismjs/components/prism-typescript";
import "prismjs/components/prism-rust";
import "prismjs/components/prism-python";
import "prismjs/components/prism-bash";
import "prismjs/components/prism-json";
import "prismjs/components/prism-toml";
import "prismjs/components/prism-yaml";
import "prismjs/components/prism-markdown";
import "prismjs/components/prism-nginx";
import "prismjs/components/prism-ini";
import "prismjs/components/prism-go";
import "prismjs/components/prism-c";
import "prismjs/components/prism-sql";
import "prismjs/components/prism-css";
import type { ReactNode } from "react";

type Tok = string | Prism.Token;

function draw(t: Tok | Tok[], key: string): ReactNode {
  if (typeof t === "string") return t;
  if (Array.isArray(t)) return t.map((x, i) => draw(x, `${key}.${i}`));
  const alias = Array.isArray(t.alias) ? t.alias.join(" ") : (t.alias ?? "");
  return (
    <span key={key} className={`tok-${t.type} ${alias ? `tok-${alias}` : ""}`}>
      {draw(t.content as Tok | Tok[], key)}
    </span>
  );
}

/** `text` coloured as `language` (plain text when unknown). */
export function Highlighted({ text, language }: { text: string; language: string | null }) {
  const grammar = language ? Prism.languages[language] : undefined;
  if (!grammar) return <>{text}</>;
  return <>{Prism.tokenize(text, grammar).map((t, i) => draw(t, String(i)))}</>;
}
