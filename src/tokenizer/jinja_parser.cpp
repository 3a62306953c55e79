// Recursive-descent parser for the Jinja subset chat templates use. Operator precedence follows
// Jinja2: conditional < or < and < not < comparisons (in, ==, <, ...) < + - < ~ < * / // % < ** <
// unary - + < postfix (. [] () | filters, is tests).
#include <cstdlib>
#include <initializer_list>

#include "core/error.h"
#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_lexer.h"

namespace nextn::jinja {
namespace {

constexpr int kMaxDepth = 200;

class ExprParser {
public:
    ExprParser(const std::vector<Token>& tokens, std::size_t start) : t_(tokens), pos_(start) {}

    const Token& peek(std::size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
    bool at_end() const { return peek().kind == Token::Kind::End; }
    bool is_op(const char* op, std::size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Op && peek(ahead).text == op;
    }
    bool is_name(const char* name, std::size_t ahead = 0) const {
        return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
    }
    const Token& next() { return t_[pos_ < t_.size() - 1 ? pos_++ : pos_]; }
    [[noreturn]] void error(const std::string& what) const {
        const Token& tok = peek();
        std::string got = tok.kind == Token::Kind::End ? "end of tag" : "'" + tok.text + "'";
        fail("chat template line ", tok.line, ": ", what, " (found ", got, ")");
    }
    void expect_op(const char* op) {
        if (!is_op(op)) error(std::string("expected '") + op + "'");
        next();
    }
    std::string expect_name() {
        if (peek().kind != Token::Kind::Name) error("expected a name");
        return next().text;
    }
    void expect_end() {
        if (!at_end()) error("unexpected tokens at the end of the tag");
    }

    ExprPtr make(Expr::Kind k, int line) {
        // Bounds the tree (and so the recursion that evaluates and frees it).
        if (++nodes_ > 5000) fail("chat template line ", line, ": expression too long");
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->line = line;
        return e;
    }

    // Full expression, with a conditional and tuples without parentheses when allowed.
    ExprPtr expression(bool allow_tuple = false) {
        ExprPtr first = conditional();
        if (!allow_tuple || !is_op(",")) return first;
        auto list = make(Expr::Kind::List, first->line);
        list->args.push_back(std::move(first));
        while (is_op(",")) {
            next();
            if (at_end() || is_op(")")) break;
            list->args.push_back(conditional());
        }
        return list;
    }

    ExprPtr conditional() {
        Guard g(*this);
        ExprPtr value = or_expr();
        while (is_name("if")) {
            int line = next().line;
            auto e = make(Expr::Kind::Cond, line);
            e->args.push_back(or_expr());
            e->args.push_back(std::move(value));
            if (is_name("else")) {
                next();
                e->args.push_back(conditional());
            } else {
                e->args.push_back(nullptr);
            }
            value = std::move(e);
        }
        return value;
    }

    ExprPtr or_expr() {
        ExprPtr left = and_expr();
        while (is_name("or")) {
            int line = next().line;
            left = binary("or", std::move(left), and_expr(), line);
        }
        return left;
    }

    ExprPtr and_expr() {
        ExprPtr left = not_expr();
        while (is_name("and")) {
            int line = next().line;
            left = binary("and", std::move(left), not_expr(), line);
        }
        return left;
    }

    ExprPtr not_expr() {
        if (is_name("not")) {
            Guard g(*this);
            int line = next().line;
            auto e = make(Expr::Kind::Unary, line);
            e->name = "not";
            e->args.push_back(not_expr());
            return e;
        }
        return compare();
    }

    ExprPtr compare() {
        ExprPtr first = math1();
        ExprPtr chain;
        while (true) {
            std::string op;
            int line = peek().line;
            if (peek().kind == Token::Kind::Op &&
                (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == "<=" ||
                 peek().text == ">" || peek().text == ">=")) {
                op = next().text;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && is_name("in", 1)) {
                next();
                next();
                op = "not in";
            } else {
                return chain ? std::move(chain) : std::move(first);
            }
            if (!chain) {  // a < b < c means a < b and b < c, as in Python
                chain = make(Expr::Kind::Compare, line);
                chain->args.push_back(std::move(first));
            }
            chain->ops.push_back(op);
            chain->args.push_back(math1());
        }
    }

    // One left-associative precedence level: operand (op operand)*, op one of `ops`.
    ExprPtr left_assoc(std::initializer_list<const char*> ops, ExprPtr (ExprParser::*operand)()) {
        ExprPtr left = (this->*operand)();
        for (;;) {
            bool found = false;
            for (const char* o : ops) found = found || is_op(o);
            if (!found) return left;
            const Token& op = next();
            left = binary(op.text, std::move(left), (this->*operand)(), op.line);
        }
    }

    ExprPtr math1() { return left_assoc({"+", "-"}, &ExprParser::concat); }
    ExprPtr concat() { return left_assoc({"~"}, &ExprParser::math2); }
    ExprPtr math2() { return left_assoc({"*", "/", "//", "%"}, &ExprParser::power); }
    ExprPtr power() { return left_assoc({"**"}, &ExprParser::unary); }

    ExprPtr unary() {
        if (is_op("-") || is_op("+")) {
            Guard g(*this);
            const Token& op = next();
            auto e = make(Expr::Kind::Unary, op.line);
            e->name = op.text;
            e->args.push_back(unary_no_filter());
            return filters_and_tests(std::move(e));
        }
        return filters_and_tests(postfix(primary()));
    }

    // Jinja2 binds unary minus before filters: -1|abs is (-1)|abs.
    ExprPtr unary_no_filter() {
        if (is_op("-") || is_op("+")) {
            Guard g(*this);
            const Token& op = next();
            auto e = make(Expr::Kind::Unary, op.line);
            e->name = op.text;
            e->args.push_back(unary_no_filter());
            return e;
        }
        return postfix(primary());
    }

    ExprPtr primary() {
        Guard g(*this);
        const Token& tok = peek();
        switch (tok.kind) {
            case Token::Kind::Name: {
                next();
                auto lit = [&](Value v) {
                    auto e = make(Expr::Kind::Literal, tok.line);
                    e->value = std::move(v);
                    return e;
                };
                if (tok.text == "true" || tok.text == "True") return lit(Value(true));
                if (tok.text == "false" || tok.text == "False") return lit(Value(false));
                if (tok.text == "none" || tok.text == "None") return lit(Value(nullptr));
                auto e = make(Expr::Kind::Name, tok.line);
                e->name = tok.text;
                return e;
            }
            case Token::Kind::String: {
                auto e = make(Expr::Kind::Literal, tok.line);
                std::string s = next().text;
                while (peek().kind == Token::Kind::String) s += next().text;  // "a" "b" joins
                e->value = Value(std::move(s));
                return e;
            }
            case Token::Kind::Int: {
                auto e = make(Expr::Kind::Literal, tok.line);
                e->value = Value(static_cast<int64_t>(std::strtoll(next().text.c_str(), nullptr, 10)));
                return e;
            }
            case Token::Kind::Float: {
                auto e = make(Expr::Kind::Literal, tok.line);
                e->value = Value(std::strtod(next().text.c_str(), nullptr));
                return e;
            }
            case Token::Kind::Op:
                if (tok.text == "(") {
                    next();
                    if (is_op(")")) {  // empty tuple
                        next();
                        return make(Expr::Kind::List, tok.line);
                    }
                    ExprPtr inner = expression(true);
                    expect_op(")");
                    return inner;
                }
                if (tok.text == "[") {
                    next();
                    auto e = make(Expr::Kind::List, tok.line);
                    while (!is_op("]")) {
                        e->args.push_back(expression());
                        if (!is_op(",")) break;
                        next();
                    }
                    expect_op("]");
                    return e;
                }
                if (tok.text == "{") {
                    next();
                    auto e = make(Expr::Kind::Dict, tok.line);
                    while (!is_op("}")) {
                        ExprPtr key = expression();
                        expect_op(":");
                        e->entries.emplace_back(std::move(key), expression());
                        if (!is_op(",")) break;
                        next();
                    }
                    expect_op("}");
                    return e;
                }
                break;
            default: break;
        }
        error("expected an expression");
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            if (is_op(".")) {
                int line = next().line;
                auto g = make(Expr::Kind::GetAttr, line);
                if (peek().kind == Token::Kind::Int) {  // foo.0 is foo[0]
                    g->kind = Expr::Kind::GetItem;
                    g->args.push_back(std::move(e));
                    auto idx = make(Expr::Kind::Literal, line);
                    idx->value = Value(static_cast<int64_t>(std::strtoll(next().text.c_str(), nullptr, 10)));
                    g->args.push_back(std::move(idx));
                } else {
                    g->name = expect_name();
                    g->args.push_back(std::move(e));
                }
                e = std::move(g);
            } else if (is_op("[")) {
                int line = next().line;
                e = subscript(std::move(e), line);
            } else if (is_op("(")) {
                int line = next().line;
                auto c = make(Expr::Kind::Call, line);
                c->args.push_back(std::move(e));
                call_args(*c);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr subscript(ExprPtr target, int line) {
        ExprPtr parts[3];
        int n = 0;
        bool is_slice = false;
        while (true) {
            if (!is_op(":") && !is_op("]")) parts[n] = expression();
            if (is_op(":")) {
                is_slice = true;
                next();
                if (++n > 2) error("too many ':' in slice");
                continue;
            }
            break;
        }
        expect_op("]");
        auto e = make(is_slice ? Expr::Kind::Slice : Expr::Kind::GetItem, line);
        e->args.push_back(std::move(target));
        if (!is_slice) {
            if (!parts[0]) fail("chat template line ", line, ": empty subscript");
            e->args.push_back(std::move(parts[0]));
        } else {
            for (auto& p : parts) e->args.push_back(std::move(p));
        }
        return e;
    }

    // After '(' : positional and keyword arguments up to ')'.
    void call_args(Expr& call) {
        while (!is_op(")")) {
            if (peek().kind == Token::Kind::Name && is_op("=", 1)) {
                std::string name = next().text;
                next();
                call.kwargs.emplace_back(name, expression());
            } else {
                if (!call.kwargs.empty()) error("positional argument after keyword argument");
                call.args.push_back(expression());
            }
            if (!is_op(",")) break;
            next();
        }
        expect_op(")");
    }

    ExprPtr filters_and_tests(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                int line = next().line;
                auto f = make(Expr::Kind::Filter, line);
                f->name = expect_name();
                f->args.push_back(std::move(e));
                if (is_op("(")) {
                    next();
                    call_args(*f);
                }
                e = postfix(std::move(f));
            } else if (is_name("is")) {
                int line = next().line;
                auto t = make(Expr::Kind::Test, line);
                if (is_name("not")) {
                    next();
                    t->negated = true;
                }
                // Names that are keywords elsewhere are also test names.
                if (peek().kind == Token::Kind::Name) {
                    t->name = next().text;
                } else if (peek().kind == Token::Kind::Op &&
                           (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
                            peek().text == "<=" || peek().text == ">=")) {
                    t->name = next().text;
                } else {
                    error("expected a test name after 'is'");
                }
                t->args.push_back(std::move(e));
                if (is_op("(")) {
                    next();
                    call_args(*t);
                } else if (!at_end() &&
                           (peek().kind == Token::Kind::String || peek().kind == Token::Kind::Int ||
                            peek().kind == Token::Kind::Float || is_op("[") || is_op("{") ||
                            (peek().kind == Token::Kind::Name && !is_name("and") &&
                             !is_name("or") && !is_name("else") && !is_name("if") &&
                             !is_name("in") && !is_name("not") && !is_name("is")))) {
                    // `x is divisibleby 3`, `x is sameas none`, `x is in [1, 2]`, `x is in d.keys`:
                    // as in Jinja2's parse_test, one primary (a list or dict literal too) with its
                    // postfix.
                    t->args.push_back(postfix(primary()));
                }
                e = std::move(t);
            } else {
                return e;
            }
        }
    }

    ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
        auto e = make(Expr::Kind::Binary, line);
        e->name = op;
        e->args.push_back(std::move(l));
        e->args.push_back(std::move(r));
        return e;
    }

    std::size_t position() const { return pos_; }

private:
    struct Guard {
        explicit Guard(ExprParser& p) : p(p) {
            if (++p.depth_ > kMaxDepth) p.error("expression nested too deeply");
        }
        ~Guard() { --p.depth_; }
        ExprParser& p;
    };
    const std::vector<Token>& t_;
    std::size_t pos_;
    int depth_ = 0;
    int nodes_ = 0;
};

class TemplateParser {
public:
    explicit TemplateParser(std::vector<Chunk> chunks) : chunks_(std::move(chunks)) {}

    Body parse() {
        Body body = block({});
        if (pos_ < chunks_.size()) unexpected(chunks_[pos_]);
        return body;
    }

private:
    static std::string keyword(const Chunk& c) {
        return !c.tokens.empty() && c.tokens[0].kind == Token::Kind::Name ? c.tokens[0].text : "";
    }

    [[noreturn]] void unexpected(const Chunk& c) {
        fail("chat template line ", c.line, ": unexpected '{% ", keyword(c), " %}'");
    }

    // Parses statements until one whose keyword is in `stops` (left unconsumed).
    Body block(const std::vector<std::string>& stops) {
        if (++depth_ > kMaxDepth) fail("chat template: blocks nested too deeply");
        Body body;
        while (pos_ < chunks_.size()) {
            const Chunk& c = chunks_[pos_];
            if (c.kind == Chunk::Kind::Text) {
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Text;
                s->text = c.text;
                body.push_back(std::move(s));
                ++pos_;
                continue;
            }
            if (c.kind == Chunk::Kind::Output) {
                ExprParser p(c.tokens, 0);
                auto s = std::make_unique<Stmt>();
                s->kind = Stmt::Kind::Output;
                s->line = c.line;
                if (p.at_end()) p.error("empty {{ }}");
                s->expr = p.expression(true);
                p.expect_end();
                body.push_back(std::move(s));
                ++pos_;
                continue;
            }
            std::string kw = keyword(c);
            for (const auto& stop : stops)
                if (kw == stop) {
                    --depth_;
                    return body;
                }
            body.push_back(statement(c, kw));
        }
        if (!stops.empty())
            fail("chat template: missing {% ", stops.back(), " %} (end of template reached inside a block)");
        --depth_;
        return body;
    }

    // Consumes the closing tag `name` (which must have no arguments).
    void end_tag(const std::string& name) {
        const Chunk& c = chunks_[pos_];
        ExprParser p(c.tokens, 1);
        p.expect_end();
        (void)name;
        ++pos_;
    }

    StmtPtr statement(const Chunk& c, const std::string& kw) {
        auto s = std::make_unique<Stmt>();
        s->line = c.line;
        ExprParser p(c.tokens, 1);
        ++pos_;
        if (kw == "if") {
            s->kind = Stmt::Kind::If;
            ExprPtr cond = p.expression();
            p.expect_end();
            while (true) {
                Body body = block({"elif", "else", "endif"});
                s->branches.emplace_back(std::move(cond), std::move(body));
                const Chunk& stop = chunks_[pos_];
                std::string skw = keyword(stop);
                if (skw == "elif") {
                    ExprParser q(stop.tokens, 1);
                    cond = q.expression();
                    q.expect_end();
                    ++pos_;
                } else if (skw == "else") {
                    end_tag("else");
                    s->branches.emplace_back(nullptr, block({"endif"}));
                    end_tag("endif");
                    break;
                } else {
                    end_tag("endif");
                    break;
                }
            }
        } else if (kw == "for") {
            s->kind = Stmt::Kind::For;
            s->targets.push_back(p.expect_name());
            while (p.is_op(",")) {
                p.next();
                s->targets.push_back(p.expect_name());
            }
            if (!p.is_name("in")) p.error("expected 'in' in for loop");
            p.next();
            // The iterable stops before a trailing `if` filter (no conditional expression here).
            s->expr = p.or_expr();
            if (p.is_name("if")) {
                p.next();
                s->condition = p.expression();
            }
            if (p.is_name("recursive")) p.error("recursive for loops are not supported");
            p.expect_end();
            s->body = block({"else", "endfor"});
            if (keyword(chunks_[pos_]) == "else") {
                end_tag("else");
                s->else_body = block({"endfor"});
            }
            end_tag("endfor");
        } else if (kw == "set") {
            std::string name = p.expect_name();
            if (p.is_op(".")) {
                p.next();
                s->attr = p.expect_name();
            }
            s->targets.push_back(name);
            while (p.is_op(",") && s->attr.empty()) {
                p.next();
                s->targets.push_back(p.expect_name());
            }
            if (p.is_op("=")) {
                p.next();
                s->kind = Stmt::Kind::Set;
                s->expr = p.expression(true);
                p.expect_end();
            } else {
                if (s->targets.size() != 1 || !s->attr.empty()) p.error("expected '='");
                if (p.is_op("|")) p.error("filters on {% set %} blocks are not supported");
                p.expect_end();
                s->kind = Stmt::Kind::SetBlock;
                s->body = block({"endset"});
                end_tag("endset");
            }
        } else if (kw == "macro") {
            s->kind = Stmt::Kind::Macro;
            s->targets.push_back(p.expect_name());
            p.expect_op("(");
            while (!p.is_op(")")) {
                std::string param = p.expect_name();
                ExprPtr def;
                if (p.is_op("=")) {
                    p.next();
                    def = p.expression();
                }
                s->params.emplace_back(param, std::move(def));
                if (!p.is_op(",")) break;
                p.next();
            }
            p.expect_op(")");
            p.expect_end();
            s->body = block({"endmacro"});
            end_tag("endmacro");
        } else if (kw == "break" || kw == "continue") {
            s->kind = kw == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue;
            p.expect_end();
        } else if (kw == "generation") {  // transformers' assistant-mask marker: renders its body
            p.expect_end();
            s->kind = Stmt::Kind::Scope;
            s->body = block({"endgeneration"});
            end_tag("endgeneration");
        } else if (kw.empty()) {
            p.error("expected a statement keyword");
        } else if (kw == "endif" || kw == "endfor" || kw == "else" || kw == "elif" || kw == "endmacro" ||
                   kw == "endset" || kw == "endgeneration") {
            unexpected(c);
        } else {
            fail("chat template line ", c.line, ": unsupported statement '{% ", kw,
                 " %}' (supported: if, for, set, macro, break, continue, raw, generation)");
        }
        return s;
    }

    std::vector<Chunk> chunks_;
    std::size_t pos_ = 0;
    int depth_ = 0;
};

}  // namespace

Body parse_template(const std::string& source) { return TemplateParser(lex_template(source)).parse(); }

}  // namespace nextn::jinja
