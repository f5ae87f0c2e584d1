"""The selector's tokens, read one at a time as the parser asks (JavaCC's token manager).

compat: SelectorParserTokenManager (5.3.3: 4.9.8's tokens plus CONTAINS, STARTSWITH, ENDSWITH)
-- the longest match wins, a keyword beats an identifier of the same length, keywords ignore
case. Tokens are read lazily, as Java's parser reads them: a character the parser never
reaches is never an error (a selector may end in text Java ignores).
"""

from __future__ import annotations

import re
from typing import Final

from aiorocketmq.remoting.protocol.sql92.errors import SelectorError, java_remark

# token kinds: SelectorParserConstants of 5.3.3
EOF: Final = 0
NOT: Final = 8
AND: Final = 9
OR: Final = 10
BETWEEN: Final = 11
IN: Final = 12
TRUE: Final = 13
FALSE: Final = 14
NULL: Final = 15
IS: Final = 16
CONTAINS: Final = 17
STARTSWITH: Final = 18
ENDSWITH: Final = 19
DECIMAL: Final = 20
FLOAT: Final = 21
STRING: Final = 23
ID: Final = 24
EQ: Final = 25
NE: Final = 26
GT: Final = 27
GE: Final = 28
LT: Final = 29
LE: Final = 30
LPAREN: Final = 31
COMMA: Final = 32
RPAREN: Final = 33
PLUS: Final = 34
MINUS: Final = 35

# SelectorParserConstants.tokenImage: how a ParseException names a kind
IMAGES: Final = (
    "<EOF>", '" "', '"\\t"', '"\\n"', '"\\r"', '"\\f"', "<LINE_COMMENT>", "<BLOCK_COMMENT>",
    '"NOT"', '"AND"', '"OR"', '"BETWEEN"', '"IN"', '"TRUE"', '"FALSE"', '"NULL"', '"IS"',
    '"CONTAINS"', '"STARTSWITH"', '"ENDSWITH"', "<DECIMAL_LITERAL>", "<FLOATING_POINT_LITERAL>",
    "<EXPONENT>", "<STRING_LITERAL>", "<ID>", '"="', '"<>"', '">"', '">="', '"<"', '"<="',
    '"("', '","', '")"', '"+"', '"-"',
)  # fmt: skip

KEYWORDS: Final = {
    "not": NOT, "and": AND, "or": OR, "between": BETWEEN, "in": IN, "true": TRUE,
    "false": FALSE, "null": NULL, "is": IS, "contains": CONTAINS, "startswith": STARTSWITH,
    "endswith": ENDSWITH,
}  # fmt: skip
_OPERATORS: Final = {
    "=": EQ, "<>": NE, ">": GT, ">=": GE, "<": LT, "<=": LE, "(": LPAREN, ",": COMMA,
    ")": RPAREN, "+": PLUS, "-": MINUS,
}  # fmt: skip

# one group per token; the order makes Python's first match JavaCC's longest one
_TOKEN = re.compile(
    r"(?P<skip>[ \t\n\r\f]+|--[^\n\r]*(?:\r\n|\n|\r)|/\*[^*]*\*+(?:[^*/][^*]*\*+)*/)"
    r"|(?P<float>[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+[eE][+-]?[0-9]+)"
    r"|(?P<decimal>0|[1-9][0-9]*[lL]?)"
    r"|(?P<word>[a-zA-Z_$][a-zA-Z0-9_$]*)"
    r"|(?P<string>'(?:''|[^'])*')"
    r"|(?P<op><>|<=|>=|[=<>(),+\-])"
)


# the kind of each group of _TOKEN but the words (4) and the operators (6)
_GROUP_KINDS: Final = (0, 0, FLOAT, DECIMAL, 0, STRING)


class Token:
    """One token: its kind, its text and where it starts in the selector."""

    __slots__ = ("image", "kind", "offset")

    def __init__(self, kind: int, image: str, offset: int) -> None:
        self.kind = kind
        self.image = image
        self.offset = offset


class Lexer:
    """Reads tokens from a selector on demand."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def next_token(self) -> Token:
        """The next token; EOF (kind 0) at the end, again on every later call."""
        text = self.text
        size = len(text)
        while True:
            pos = self.pos
            if pos >= size:
                return Token(EOF, "", size)
            match = _TOKEN.match(text, pos)
            if match is None:
                raise self._lexical_error(pos)
            self.pos = match.end()
            group = match.lastindex or 0
            if group == 1:
                continue
            image = match.group()
            if group == 4:
                kind = KEYWORDS.get(image.lower(), ID) if len(image) <= 10 else ID
            elif group == 6:
                kind = _OPERATORS[image]
            else:
                kind = _GROUP_KINDS[group]
            return Token(kind, image, pos)

    def _lexical_error(self, pos: int) -> SelectorError:
        """Java's TokenMgrError: where the scan died, the character, the text before it.

        compat: SelectorParserTokenManager.getNextToken -- the scan reads while a token could
        still match, plus the character that ends that; if that was the input's last one, the
        error is reported as <EOF> one column further, with everything read.
        """
        text = self.text
        size = len(text)
        first = text[pos]
        if first == "'" or text.startswith("/*", pos):
            alive = size - pos  # an unterminated string or comment
        elif first in "./":
            alive = 1  # "." without a digit, "/" without a "*"
        else:
            alive = 0
        last = min(pos + alive, size - 1)
        char = text[last]
        # a character outside the BMP is two Java chars: the second follows the one shown
        split = ord(char) > 0xFFFF and last == pos + alive
        line, column = position(text, last)
        read = last - pos + 1
        if last == size - 1 and not split:
            after = text[pos:] if read > 1 else ""
            if char in "\n\r":
                line += 1
                column = 0
            else:
                column += 1
            found = "<EOF> "
        else:
            after = text[pos:last] if read > 1 else ""
            if split:
                column -= 1
            unit = _utf16(char)[0]
            found = f'"{add_escapes(chr(unit) if split else char)}" ({unit}), '
        message = f"Lexical error at line {line}, column {column}.  Encountered: {found}"
        message += f'after : "{add_escapes(after)}"'
        return SelectorError(
            java_remark("org.apache.rocketmq.filter.parser.TokenMgrError", message)
        )


def position(text: str, offset: int) -> tuple[int, int]:
    """JavaCC's line and column of a character (SimpleCharStream: tabs stop every 8)."""
    line = 1
    column = 0
    prev_cr = False
    prev_lf = False
    for char in text[: offset + 1]:
        column += 1
        if prev_lf:
            prev_lf = False
            line += 1
            column = 1
        elif prev_cr:
            prev_cr = False
            if char == "\n":
                prev_lf = True
            else:
                line += 1
                column = 1
        if char == "\r":
            prev_cr = True
        elif char == "\n":
            prev_lf = True
        elif char == "\t":
            column -= 1
            column += 8 - (column % 8)
        # a character outside the BMP is two Java chars
        if ord(char) > 0xFFFF:
            column += 1
    return line, column


def add_escapes(text: str) -> str:
    """JavaCC's addEscapes: control characters, quotes and backslashes as Java escapes."""
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char == "\b":
            out.append("\\b")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\f":
            out.append("\\f")
        elif char == "\r":
            out.append("\\r")
        elif char == '"':
            out.append('\\"')
        elif char == "'":
            out.append("\\'")
        elif char == "\\":
            out.append("\\\\")
        elif code == 0:
            continue
        elif code < 0x20 or code > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in (_utf16(char) if code > 0xFFFF else [code]))
        else:
            out.append(char)
    return "".join(out)


def _utf16(char: str) -> list[int]:
    code = ord(char)
    if code <= 0xFFFF:
        return [code]
    code -= 0x10000
    return [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
