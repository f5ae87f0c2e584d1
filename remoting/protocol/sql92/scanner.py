"""JavaCC's lookahead machinery under the selector parser: the token buffer, the syntactic
scans (``jj_3*``), and the rescan that adds a failed lookahead's tokens to a ParseException.

compat: SelectorParser.jj_scan_token, jj_save, jj_rescan_token, jj_add_error_token (5.3.3).
A scan method returns True where Java's returns false (matched). The scans only read tokens
and move ``scanpos``; they build nothing.
"""

from __future__ import annotations

from aiorocketmq.remoting.protocol.sql92 import lexer as lx
from aiorocketmq.remoting.protocol.sql92.errors import SelectorError
from aiorocketmq.remoting.protocol.sql92.lexer import Lexer, Token
from aiorocketmq.remoting.protocol.sql92.limits import MAX_DEPTH
from aiorocketmq.remoting.protocol.sql92.nodes import depth_remark

_PLUS = 6  # the unary plus's lookahead, jj_2_7
_UNBOUNDED = 2**31 - 1
_PREFIXES = frozenset({lx.PLUS, lx.MINUS, lx.NOT})
_OPERANDS = frozenset({lx.STRING, lx.DECIMAL, lx.FLOAT, lx.TRUE, lx.FALSE, lx.NULL, lx.ID})
_ORDERS = frozenset({lx.GT, lx.GE, lx.LT, lx.LE})
_TEXTS = frozenset({lx.CONTAINS, lx.STARTSWITH, lx.ENDSWITH})


class _LookaheadSuccess(Exception):
    """jjLs: a bounded lookahead matched all its tokens."""


class _Call:
    """JJCalls: one remembered lookahead (when it may be rescanned, where, how far)."""

    __slots__ = ("arg", "first", "gen")

    def __init__(self) -> None:
        self.gen = 0
        self.first = -1
        self.arg = 0


class Scanner:
    """The token buffer and the lookahead scans over it."""

    def __init__(self, lexer: Lexer) -> None:
        self.lexer = lexer
        self.tokens: list[Token] = []
        # Java's `token`: the index of the last consumed token, -1 before the first
        self.token = -1
        self.scanpos = -1
        self.lastpos = -1
        self.la = 0
        self.rescanning = False
        self.calls: list[list[_Call]] = [[_Call()] for _ in range(7)]
        self.endpos = 0
        self.last_tokens = [0] * 100
        self.entries: list[list[int]] = []
        self.nesting = 0
        # the furthest token a scan has read; s_unary's results by start (not when rescanning)
        self.reach = -1
        self.memo: dict[int, tuple[bool, int, int]] = {}

    def tok(self, index: int) -> Token:
        """The token at ``index``, read from the text when first needed."""
        tokens = self.tokens
        while len(tokens) <= index:
            tokens.append(self.lexer.next_token())
        return tokens[index]

    def run_lookahead(self, index: int, depth: int, gen: int) -> bool:
        """jj_2_*: scan from the next token; remember the call for a later error."""
        self.la = depth
        self.scanpos = self.lastpos = self.token
        try:
            matched = self._scan(index)
        except _LookaheadSuccess:
            matched = True
        finally:
            self._save(index, depth, gen)
        return matched

    def plus_lookahead(self, gen: int) -> bool:
        """jj_2_7, LOOKAHEAD("+" unaryExpr()): unbounded, so it scans the whole operand; it
        fails at once (and is remembered so) when the next token is not "+"."""
        if self.tok(self.token + 1).kind != lx.PLUS:
            self.la = _UNBOUNDED - 1
            self._save(_PLUS, _UNBOUNDED, gen)
            return False
        return self.run_lookahead(_PLUS, _UNBOUNDED, gen)

    def _save(self, index: int, depth: int, gen: int) -> None:
        calls = self.calls[index]
        for call in calls:
            if call.gen <= gen:
                break
        else:
            call = _Call()
            calls.append(call)
        call.gen = gen + depth - self.la
        call.first = self.token
        call.arg = depth

    def rescan(self, entries: list[list[int]], gen: int) -> None:
        """jj_rescan_token: replay the lookaheads still current, adding what they expected."""
        self.entries = entries
        self.endpos = 0
        self.rescanning = True
        for index in range(7):
            try:
                for call in self.calls[index]:
                    if call.gen > gen:
                        self.la = call.arg
                        self.scanpos = self.lastpos = call.first
                        self._scan(index)
            except _LookaheadSuccess:
                pass
        self.rescanning = False
        self._add_error_token(0, 0)

    def _add_error_token(self, kind: int, pos: int) -> None:
        if pos >= 100:
            return
        if pos == self.endpos + 1:
            self.last_tokens[self.endpos] = kind
            self.endpos += 1
        elif self.endpos != 0:
            entry = self.last_tokens[: self.endpos]
            # compat: 5.3.3's check -- only the last entry of another length decides
            exists = False
            for old in self.entries:
                exists = True
                if len(old) == len(entry):
                    if old != entry:
                        exists = False
                    else:
                        break
            if not exists:
                self.entries.append(entry)
            if pos != 0:
                self.endpos = pos
                self.last_tokens[pos - 1] = kind

    def st(self, kind: int) -> bool:
        """jj_scan_token: the next scanned token is ``kind``."""
        scanpos = self.scanpos
        if scanpos == self.lastpos:
            self.la -= 1
            scanpos += 1
            self.lastpos = scanpos
        else:
            scanpos += 1
        self.scanpos = scanpos
        if scanpos > self.reach:
            self.reach = scanpos
        tok = self.tok(scanpos)
        if self.rescanning and scanpos >= self.token:
            self._add_error_token(kind, scanpos - self.token)
        if tok.kind != kind:
            return False
        if self.la == 0 and scanpos == self.lastpos:
            raise _LookaheadSuccess
        return True

    def miss(self) -> bool:
        """A jj_scan_token that fails, for its effect on how far the scan has read."""
        if self.scanpos == self.lastpos:
            self.la -= 1
            self.lastpos += 1
        if self.scanpos + 1 > self.reach:
            self.reach = self.scanpos + 1
        self.tok(self.scanpos + 1)
        return False

    def next_kind(self) -> int:
        return self.tok(self.scanpos + 1).kind

    def _scan(self, index: int) -> bool:
        if index == 0:
            return self.st(lx.IS) and self.st(lx.NULL)
        if index == 1:
            return self.st(lx.NOT) and self.st(lx.CONTAINS) and self.st(lx.STRING)
        if index == 2:
            return self.st(lx.NOT) and self.st(lx.STARTSWITH) and self.st(lx.STRING)
        if index == 3:
            return self.st(lx.NOT) and self.st(lx.ENDSWITH) and self.st(lx.STRING)
        if index == 4:
            return self.st(lx.NOT) and self._between()
        if index == 5:
            return self.st(lx.NOT) and self._in_list()
        return self.st(lx.PLUS) and self.s_unary()

    # the productions, scanned (jj_3R_*)

    def s_unary(self) -> bool:
        """jj_3R_7: unaryExpr. Outside a rescan, the first token picks the one alternative
        that can match (the others fail at once, with the same effect), and a result is kept
        per start: nested ``+`` lookaheads scan each operand once, not once per level."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            raise SelectorError(depth_remark())
        try:
            if self.rescanning:
                return self._unary_alternatives()
            start = self.scanpos
            known = self.memo.get(start)
            if known is not None:
                matched, end, reach = known
                self.scanpos = end
                if reach > self.lastpos:
                    self.la -= reach - self.lastpos
                    self.lastpos = reach
                if reach > self.reach:
                    self.reach = reach
                return matched
            outer = self.reach
            self.reach = start
            matched = self._unary_first()
            reach = self.reach
            self.memo[start] = (matched, self.scanpos, reach)
            if outer > reach:
                self.reach = outer
            return matched
        finally:
            self.nesting -= 1

    def _unary_alternatives(self) -> bool:
        xsp = self.scanpos
        for kind in (lx.PLUS, lx.MINUS, lx.NOT):
            if self.st(kind) and self.s_unary():
                return True
            self.scanpos = xsp
        return self._primary()

    def _unary_first(self) -> bool:
        kind = self.next_kind()
        if kind in _PREFIXES:
            return self.st(kind) and self.s_unary()
        if kind in _OPERANDS:
            return self.st(kind)
        if kind == lx.LPAREN:
            return self.st(lx.LPAREN) and self._or() and self.st(lx.RPAREN)
        return self.miss()

    def _primary(self) -> bool:
        """jj_3R_12: a literal, a property, or a parenthesised expression."""
        xsp = self.scanpos
        for kind in (lx.STRING, lx.DECIMAL, lx.FLOAT, lx.TRUE, lx.FALSE, lx.NULL, lx.ID):
            if self.st(kind):
                return True
            self.scanpos = xsp
        return self.st(lx.LPAREN) and self._or() and self.st(lx.RPAREN)

    def _or(self) -> bool:
        """jj_3R_18."""
        if not self._and():
            return False
        while True:
            xsp = self.scanpos
            if not (self.st(lx.OR) and self._and()):
                self.scanpos = xsp
                return True

    def _and(self) -> bool:
        """jj_3R_25."""
        if not self._equality():
            return False
        while True:
            xsp = self.scanpos
            if not (self.st(lx.AND) and self._equality()):
                self.scanpos = xsp
                return True

    def _equality(self) -> bool:
        """jj_3R_28: comparisons joined by =, <>, IS NULL, IS NOT NULL."""
        if not self._comparison():
            return False
        while True:
            xsp = self.scanpos
            if not self.rescanning:
                if self._equality_first():
                    continue
                self.scanpos = xsp
                return True
            if self.st(lx.EQ) and self._comparison():
                continue
            self.scanpos = xsp
            if self.st(lx.NE) and self._comparison():
                continue
            self.scanpos = xsp
            if self.st(lx.IS) and self.st(lx.NULL):
                continue
            self.scanpos = xsp
            if self.st(lx.IS) and self.st(lx.NOT) and self.st(lx.NULL):
                continue
            self.scanpos = xsp
            return True

    def _equality_first(self) -> bool:
        kind = self.next_kind()
        if kind == lx.EQ or kind == lx.NE:
            return self.st(kind) and self._comparison()
        if kind != lx.IS:
            return self.miss()
        self.st(lx.IS)
        kind = self.next_kind()
        if kind == lx.NULL:
            return self.st(lx.NULL)
        if kind == lx.NOT:
            return self.st(lx.NOT) and self.st(lx.NULL)
        return self.miss()

    def _comparison(self) -> bool:
        """jj_3R_30: a unary expression and its comparison operators."""
        if not self.s_unary():
            return False
        while True:
            xsp = self.scanpos
            if not self._comparison_step(xsp):
                self.scanpos = xsp
                return True

    def _comparison_step(self, xsp: int) -> bool:
        """jj_3R_32: the alternatives in the generated order."""
        if not self.rescanning:
            return self._comparison_first()
        for kind in (lx.GT, lx.GE, lx.LT, lx.LE):
            if self.st(kind) and self.s_unary():
                return True
            self.scanpos = xsp
        for kind in (lx.CONTAINS, lx.STARTSWITH, lx.ENDSWITH):
            if self.st(kind) and self.st(lx.STRING):
                return True
            self.scanpos = xsp
            if self.st(lx.NOT) and self.st(kind) and self.st(lx.STRING):
                return True
            self.scanpos = xsp
        if self._between():
            return True
        self.scanpos = xsp
        if self.st(lx.NOT) and self._between():
            return True
        self.scanpos = xsp
        if self._in_list():
            return True
        self.scanpos = xsp
        return self.st(lx.NOT) and self._in_list()

    def _comparison_first(self) -> bool:
        kind = self.next_kind()
        if kind in _ORDERS:
            return self.st(kind) and self.s_unary()
        if kind in _TEXTS:
            return self.st(kind) and self.st(lx.STRING)
        if kind == lx.BETWEEN:
            return self._between()
        if kind == lx.IN:
            return self._in_list()
        if kind != lx.NOT:
            return self.miss()
        self.st(lx.NOT)
        kind = self.next_kind()
        if kind in _TEXTS:
            return self.st(kind) and self.st(lx.STRING)
        if kind == lx.BETWEEN:
            return self._between()
        if kind == lx.IN:
            return self._in_list()
        return self.miss()

    def _between(self) -> bool:
        return self.st(lx.BETWEEN) and self.s_unary() and self.st(lx.AND) and self.s_unary()

    def _in_list(self) -> bool:
        if not (self.st(lx.IN) and self.st(lx.LPAREN) and self.st(lx.STRING)):
            return False
        while True:
            xsp = self.scanpos
            if not (self.st(lx.COMMA) and self.st(lx.STRING)):
                self.scanpos = xsp
                break
        return self.st(lx.RPAREN)
