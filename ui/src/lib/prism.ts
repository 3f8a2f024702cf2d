// Prism's language files expect a global `Prism`; this module, imported first, provides it.
import Prism from "prismjs";

(globalThis as unknown as { Prism: typeof Prism }).Prism = Prism;

export default Prism;
