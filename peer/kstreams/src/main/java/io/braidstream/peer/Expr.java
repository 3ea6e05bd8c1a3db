package io.braidstream.peer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The subset of Braid's expressions (expr-lang) that DesignRunner
 * implements the way Braid evaluates them: identifiers (key, value,
 * aggregate, left, right), field access (value.amount), number, string, true/false/nil
 * literals, list literals ([a, b]), + - * on numbers, + on strings (concatenation), comparisons
 * (== != < <= > >=), && || ! (and, or, not), parentheses and object
 * literals ({id: key, total: value.amount}). Anything else, / and % among
 * them, is refused at parse time by an IllegalArgumentException that names
 * the expression.
 *
 * Values are Jackson JsonNodes. As in Braid, numbers compute as doubles and
 * a whole result within 2^53 comes out as an integer; a missing field is
 * nil, a field of nil an error; a predicate that gives nil is false.
 */
final class Expr {
    private final Node root;
    private final java.util.Set<String> names;

    private Expr(Node root, java.util.Set<String> names) {
        this.root = root;
        this.names = names;
    }

    /** reads tells whether the expression reads the variable name. */
    boolean reads(String name) {
        return names.contains(name);
    }

    /** parse parses src or throws IllegalArgumentException naming it. */
    static Expr parse(String src) {
        Parser p = new Parser(src);
        Node n = p.or();
        p.skip();
        if (p.pos != src.length()) {
            throw p.fail("unexpected '" + src.charAt(p.pos) + "'");
        }
        return new Expr(n, p.names);
    }

    /** eval evaluates the expression with the variables env. */
    JsonNode eval(Map<String, JsonNode> env) {
        return normalize(root.eval(env));
    }

    /** test evaluates a predicate: nil is false, anything not a bool an error. */
    boolean test(Map<String, JsonNode> env) {
        JsonNode v = root.eval(env);
        if (v == null || v.isNull() || v.isMissingNode()) {
            return false;
        }
        if (!v.isBoolean()) {
            throw new IllegalStateException("predicate gave " + v + ", not a bool");
        }
        return v.booleanValue();
    }

    static JsonNode normalize(JsonNode v) {
        if (v == null || v.isMissingNode()) {
            return NullNode.instance;
        }
        if (v.isNumber()) {
            return number(v.doubleValue());
        }
        if (v.isObject()) {
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            v.fields().forEachRemaining(e -> o.set(e.getKey(), normalize(e.getValue())));
            return o;
        }
        return v;
    }

    static JsonNode number(double d) {
        if (d == Math.rint(d) && Math.abs(d) <= 9007199254740992.0) {
            return LongNode.valueOf((long) d);
        }
        return DoubleNode.valueOf(d);
    }

    private interface Node {
        JsonNode eval(Map<String, JsonNode> env);
    }

    private static boolean isNil(JsonNode v) {
        return v == null || v.isNull() || v.isMissingNode();
    }

    private static boolean bool(JsonNode v, String op) {
        if (v == null || !v.isBoolean()) {
            throw new IllegalStateException(op + " of " + v + ", not a bool");
        }
        return v.booleanValue();
    }

    private static boolean equal(JsonNode a, JsonNode b) {
        if (isNil(a) || isNil(b)) {
            return isNil(a) && isNil(b);
        }
        if (a.isNumber() && b.isNumber()) {
            return a.doubleValue() == b.doubleValue();
        }
        return a.equals(b);
    }

    private static JsonNode binary(String op, JsonNode a, JsonNode b) {
        switch (op) {
            case "==":
                return BooleanNode.valueOf(equal(a, b));
            case "!=":
                return BooleanNode.valueOf(!equal(a, b));
            default:
                break;
        }
        if (a != null && b != null && a.isTextual() && b.isTextual()) {
            String x = a.textValue(), y = b.textValue();
            int c = x.compareTo(y);
            switch (op) {
                case "+": return TextNode.valueOf(x + y);
                case "<": return BooleanNode.valueOf(c < 0);
                case "<=": return BooleanNode.valueOf(c <= 0);
                case ">": return BooleanNode.valueOf(c > 0);
                case ">=": return BooleanNode.valueOf(c >= 0);
                default: break;
            }
        }
        if (a == null || b == null || !a.isNumber() || !b.isNumber()) {
            throw new IllegalStateException("invalid operation: " + a + " " + op + " " + b);
        }
        double x = a.doubleValue(), y = b.doubleValue();
        switch (op) {
            case "+": return number(x + y);
            case "-": return number(x - y);
            case "*": return number(x * y);
            case "<": return BooleanNode.valueOf(x < y);
            case "<=": return BooleanNode.valueOf(x <= y);
            case ">": return BooleanNode.valueOf(x > y);
            case ">=": return BooleanNode.valueOf(x >= y);
            default: throw new IllegalStateException("operator " + op);
        }
    }

    /** Parser is a recursive-descent parser of the subset. */
    private static final class Parser {
        final String src;
        /** names are the variables the expression reads. */
        final java.util.Set<String> names = new java.util.HashSet<>();
        int pos;

        Parser(String src) {
            this.src = src;
        }

        IllegalArgumentException fail(String why) {
            return new IllegalArgumentException("expression \"" + src + "\" at " + pos + ": " + why
                    + " (the peer supports fields, literals, + - *, comparisons, && || !, and object literals)");
        }

        void skip() {
            while (pos < src.length() && Character.isWhitespace(src.charAt(pos))) {
                pos++;
            }
        }

        boolean eat(String tok) {
            skip();
            if (!src.startsWith(tok, pos)) {
                return false;
            }
            // a word operator must not run into an identifier
            if (Character.isLetter(tok.charAt(0)) && pos + tok.length() < src.length()
                    && Character.isLetterOrDigit(src.charAt(pos + tok.length()))) {
                return false;
            }
            // "=" alone, "<" before "<=" and so on are told apart by the callers' order
            pos += tok.length();
            return true;
        }

        Node or() {
            Node l = and();
            while (eat("||") || eat("or")) {
                Node a = l, b = and();
                l = env -> BooleanNode.valueOf(bool(a.eval(env), "||") || bool(b.eval(env), "||"));
            }
            return l;
        }

        Node and() {
            Node l = cmp();
            while (eat("&&") || eat("and")) {
                Node a = l, b = cmp();
                l = env -> BooleanNode.valueOf(bool(a.eval(env), "&&") && bool(b.eval(env), "&&"));
            }
            return l;
        }

        Node cmp() {
            Node l = add();
            for (String op : new String[] {"==", "!=", "<=", ">=", "<", ">"}) {
                if (eat(op)) {
                    Node a = l, b = add();
                    return env -> binary(op, a.eval(env), b.eval(env));
                }
            }
            return l;
        }

        Node add() {
            Node l = mul();
            while (true) {
                String op = eat("+") ? "+" : eat("-") ? "-" : null;
                if (op == null) {
                    return l;
                }
                Node a = l, b = mul();
                l = env -> binary(op, a.eval(env), b.eval(env));
            }
        }

        Node mul() {
            Node l = unary();
            while (true) {
                skip();
                if (src.startsWith("**", pos)) {
                    throw fail("unsupported operator **");
                }
                if (!eat("*")) {
                    if (pos < src.length() && (src.charAt(pos) == '/' || src.charAt(pos) == '%')) {
                        throw fail("unsupported operator " + src.charAt(pos));
                    }
                    return l;
                }
                Node a = l, b = unary();
                l = env -> binary("*", a.eval(env), b.eval(env));
            }
        }

        Node unary() {
            if (eat("!") || eat("not")) {
                Node a = unary();
                return env -> BooleanNode.valueOf(!bool(a.eval(env), "!"));
            }
            if (eat("-")) {
                Node a = unary();
                return env -> binary("-", LongNode.valueOf(0), a.eval(env));
            }
            return postfix();
        }

        Node postfix() {
            Node n = primary();
            while (true) {
                skip();
                if (pos < src.length() && src.charAt(pos) == '.') {
                    pos++;
                    String f = ident();
                    Node o = n;
                    n = env -> {
                        JsonNode v = o.eval(env);
                        if (isNil(v)) {
                            // as expr-lang: a missing field is nil, a field of nil an error
                            throw new IllegalStateException("cannot fetch " + f + " from nil");
                        }
                        if (!v.isObject()) {
                            throw new IllegalStateException("field " + f + " of " + v);
                        }
                        JsonNode x = v.get(f);
                        return x == null ? NullNode.instance : x;
                    };
                } else if (pos < src.length() && (src.charAt(pos) == '[' || src.charAt(pos) == '(')) {
                    throw fail("unsupported '" + src.charAt(pos) + "' (indexing and calls)");
                } else {
                    return n;
                }
            }
        }

        String ident() {
            skip();
            int start = pos;
            while (pos < src.length() && (Character.isLetterOrDigit(src.charAt(pos)) || src.charAt(pos) == '_')) {
                pos++;
            }
            if (start == pos || Character.isDigit(src.charAt(start))) {
                throw fail("want a name");
            }
            return src.substring(start, pos);
        }

        Node primary() {
            skip();
            if (pos >= src.length()) {
                throw fail("unexpected end");
            }
            char c = src.charAt(pos);
            if (c == '(') {
                pos++;
                Node n = or();
                if (!eat(")")) {
                    throw fail("want )");
                }
                return n;
            }
            if (c == '{') {
                pos++;
                List<String> names = new ArrayList<>();
                List<Node> vals = new ArrayList<>();
                if (!eat("}")) {
                    do {
                        names.add(ident());
                        if (!eat(":")) {
                            throw fail("want :");
                        }
                        vals.add(or());
                    } while (eat(","));
                    if (!eat("}")) {
                        throw fail("want }");
                    }
                }
                return env -> {
                    ObjectNode o = JsonNodeFactory.instance.objectNode();
                    for (int i = 0; i < names.size(); i++) {
                        o.set(names.get(i), vals.get(i).eval(env));
                    }
                    return o;
                };
            }
            if (c == '[') {
                pos++;
                List<Node> items = new ArrayList<>();
                if (!eat("]")) {
                    do {
                        items.add(or());
                    } while (eat(","));
                    if (!eat("]")) {
                        throw fail("want ]");
                    }
                }
                return env -> {
                    com.fasterxml.jackson.databind.node.ArrayNode a = JsonNodeFactory.instance.arrayNode();
                    for (Node item : items) {
                        a.add(item.eval(env));
                    }
                    return a;
                };
            }
            if (c == '"') {
                StringBuilder b = new StringBuilder();
                pos++;
                while (pos < src.length() && src.charAt(pos) != '"') {
                    if (src.charAt(pos) == '\\') {
                        throw fail("unsupported escape in a string");
                    }
                    b.append(src.charAt(pos++));
                }
                if (pos >= src.length()) {
                    throw fail("unterminated string");
                }
                pos++;
                JsonNode s = TextNode.valueOf(b.toString());
                return env -> s;
            }
            if (Character.isDigit(c)) {
                int start = pos;
                while (pos < src.length() && (Character.isDigit(src.charAt(pos)) || src.charAt(pos) == '.')) {
                    pos++;
                }
                JsonNode num = number(Double.parseDouble(src.substring(start, pos)));
                return env -> num;
            }
            String id = ident();
            switch (id) {
                case "true": return env -> BooleanNode.TRUE;
                case "false": return env -> BooleanNode.FALSE;
                case "nil": return env -> NullNode.instance;
                case "key": case "value": case "aggregate": case "left": case "right":
                    names.add(id);
                    return env -> {
                        JsonNode v = env.get(id);
                        if (v == null) {
                            throw new IllegalStateException(id + " is not defined here");
                        }
                        return v;
                    };
                default:
                    throw fail("unsupported name " + id);
            }
        }
    }
}
