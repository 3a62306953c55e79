#include "tokenizer/jinja_eval.h"

#include <cmath>
#include <unordered_map>

#include "core/error.h"
#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_limits.h"

namespace nextn::jinja {

void error_at(int line, const std::string& what) { fail("chat template line ", line, ": ", what); }

const Value* Scope::find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
        auto it = s->vars.find(name);
        if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
}

std::string Interpreter::render(const Body& body) {
    std::string out;
    Scope top;  // template-level {% set %} lands here, above the globals
    top.parent = &globals_;
    top_ = &top;
    struct ClearTop {  // top dies with this call, also when the template fails
        Scope*& slot;
        ~ClearTop() { slot = nullptr; }
    } clear_top{top_};
    if (exec(body, top, out) != Flow::Normal) fail("chat template: break/continue outside a loop");
    return out;
}

Interpreter::Flow Interpreter::exec(const Body& body, Scope& scope, std::string& out) {
    // Blocks nest inside macro calls that nest inside blocks: the parser's bound on block depth
    // does not bound this recursion, so blocks count toward the same depth as expressions.
    Nest nest(*this, body.empty() ? 0 : body.front()->line);
    for (const auto& s : body) {
        Flow f = exec(*s, scope, out);
        if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, Scope& scope, std::string& out) {
    switch (s.kind) {
        case Stmt::Kind::Text:
            append_bounded(out, s.text, s.line);
            break;
        case Stmt::Kind::Output:
            append_bounded(out, eval(*s.expr, scope).str(), s.line);
            break;
        case Stmt::Kind::If:
            for (const auto& [cond, body] : s.branches)
                if (!cond || eval(*cond, scope).truthy()) return exec(body, scope, out);
            break;
        case Stmt::Kind::For: exec_for(s, scope, out); break;
        case Stmt::Kind::Set: exec_set(s, scope, eval(*s.expr, scope)); break;
        case Stmt::Kind::SetBlock: {
            std::string captured;
            if (exec(s.body, scope, captured) != Flow::Normal) error_at(s.line, "break/continue inside {% set %} block");
            exec_set(s, scope, Value(std::move(captured)));
            break;
        }
        case Stmt::Kind::Macro: scope.vars[s.targets[0]] = define_macro(s); break;
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
        case Stmt::Kind::Scope: return exec(s.body, scope, out);
    }
    return Flow::Normal;
}

namespace {

// Fails when `v` holds `self` (a namespace assigned into itself would be a reference cycle:
// leaked, and printing it recursed until the stack overflowed) or nests lists and dicts deeper
// than kMaxValueDepth (a loop can add a level per iteration). `seen` keeps the deepest level
// each shared container was checked at, so shared parts are not walked again and again.
void check_storable(const Value& v, const Object* self, int depth,
                    std::unordered_map<const void*, int>& seen, int line) {
    if (!v.is_array() && !v.is_object()) return;
    if (depth > kMaxValueDepth)
        error_at(line, "value nested too deeply (over " + std::to_string(kMaxValueDepth) +
                           " lists/dicts)");
    const void* key = v.is_array() ? static_cast<const void*>(&v.as_array()) : &v.as_object();
    if (key == self) error_at(line, "cannot store a namespace inside itself");
    auto [it, fresh] = seen.emplace(key, depth);
    if (!fresh) {
        if (it->second >= depth) return;
        it->second = depth;
    }
    if (v.is_array())
        for (const Value& x : v.as_array()) check_storable(x, self, depth + 1, seen, line);
    else
        for (const auto& [k, x] : v.as_object().items)
            check_storable(x, self, depth + 1, seen, line);
}

}  // namespace

void Interpreter::exec_set(const Stmt& s, Scope& scope, const Value& v) {
    const Value* target = s.attr.empty() ? nullptr : scope.find(s.targets[0]);
    std::unordered_map<const void*, int> seen;
    check_storable(v, target && target->is_object() ? &target->as_object() : nullptr, 1, seen,
                   s.line);
    if (!s.attr.empty()) {
        if (!target || !target->is_object() || !target->as_object().is_namespace)
            error_at(s.line, "cannot assign attribute '" + s.attr + "' of '" + s.targets[0] + "': not a namespace()");
        target->as_object().set(s.attr, v);
        return;
    }
    if (s.targets.size() == 1) {
        scope.vars[s.targets[0]] = v;
        return;
    }
    Array items = iterate(v, s.line);
    if (items.size() != s.targets.size())
        error_at(s.line, "cannot unpack " + std::to_string(items.size()) + " values into " +
                             std::to_string(s.targets.size()) + " names");
    for (std::size_t i = 0; i < items.size(); ++i) scope.vars[s.targets[i]] = items[i];
}

void Interpreter::exec_for(const Stmt& s, Scope& scope, std::string& out) {
    Value seq = eval(*s.expr, scope);
    if (seq.is_none()) error_at(s.line, "'NoneType' object is not iterable");
    Array all = seq.is_undefined() ? Array{} : iterate(seq, s.line);
    Scope body_scope;
    body_scope.parent = &scope;
    auto bind = [&](const Value& item) {
        if (s.targets.size() == 1) {
            body_scope.vars[s.targets[0]] = item;
            return;
        }
        Array parts = iterate(item, s.line);
        if (parts.size() != s.targets.size())
            error_at(s.line, "cannot unpack " + std::to_string(parts.size()) + " values into " +
                                 std::to_string(s.targets.size()) + " loop names");
        for (std::size_t k = 0; k < parts.size(); ++k) body_scope.vars[s.targets[k]] = parts[k];
    };
    Array items;
    if (s.condition) {  // `for x in xs if cond`: filtered before loop.index and loop.length count
        for (const Value& item : all) {
            bind(item);
            if (eval(*s.condition, body_scope).truthy()) items.push_back(item);
        }
    } else {
        items = std::move(all);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
        step(s.line);
        // Each iteration starts afresh: a {% set %} in the body is not seen by the next one
        // (Jinja2 compiles the body as a function whose locals start from the enclosing scope).
        body_scope.vars.clear();
        bind(items[i]);
        auto loop = std::make_shared<Object>();
        loop->items = {{"index", Value(i + 1)},
                       {"index0", Value(i)},
                       {"revindex", Value(n - i)},
                       {"revindex0", Value(n - i - 1)},
                       {"first", Value(i == 0)},
                       {"last", Value(i == n - 1)},
                       {"length", Value(n)},
                       {"depth", Value(1)},
                       {"depth0", Value(0)},
                       {"previtem", i > 0 ? items[i - 1] : Value::undefined("previtem")},
                       {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("nextitem")}};
        auto cycle = std::make_shared<Callable>();
        cycle->name = "loop.cycle";
        cycle->fn = [i](const CallArgs& a) -> Value {
            if (a.positional.empty()) error_at(a.line, "loop.cycle() needs at least one argument");
            return a.positional[i % a.positional.size()];
        };
        loop->items.emplace_back("cycle", Value(cycle));
        body_scope.vars["loop"] = Value(loop);
        Flow f = exec(s.body, body_scope, out);
        if (f == Flow::Break) break;
    }
    if (n == 0 && !s.else_body.empty()) exec(s.else_body, scope, out);
}

Value Interpreter::define_macro(const Stmt& s) {
    auto fn = std::make_shared<Callable>();
    fn->name = s.targets[0];
    const Stmt* def = &s;
    fn->fn = [this, def](const CallArgs& args) -> Value {
        if (depth_ > 100) error_at(def->line, "macro recursion too deep");
        Scope local;
        local.parent = top_;
        if (args.positional.size() > def->params.size())
            error_at(args.line, "macro '" + def->targets[0] + "' takes " + std::to_string(def->params.size()) +
                                    " arguments, got " + std::to_string(args.positional.size()));
        for (std::size_t i = 0; i < def->params.size(); ++i) {
            const auto& [name, dflt] = def->params[i];
            if (i < args.positional.size()) local.vars[name] = args.positional[i];
            else if (const Value* kw = args.kw(name)) local.vars[name] = *kw;
            else if (dflt) local.vars[name] = eval(*dflt, local);
            else local.vars[name] = Value::undefined(name);
        }
        for (const auto& [k, v] : args.keyword) {
            bool known = false;
            for (const auto& p : def->params) known |= p.first == k;
            if (!known) error_at(args.line, "macro '" + def->targets[0] + "' has no parameter '" + k + "'");
        }
        std::string out;
        ++depth_;
        struct Down {
            int& d;
            ~Down() { --d; }
        } down{depth_};
        exec(def->body, local, out);
        return Value(std::move(out));
    };
    return Value(fn);
}

CallArgs Interpreter::eval_args(const Expr& e, Scope& scope, std::size_t first) {
    CallArgs a;
    a.line = e.line;
    for (std::size_t i = first; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i], scope));
    for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v, scope));
    return a;
}

Value Interpreter::call(const Expr& e, Scope& scope) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::GetAttr) {
        Value obj = eval(*callee.args[0], scope);
        if (obj.is_undefined())
            error_at(e.line, "'" + obj.undefined_name() + "' is undefined (calling ." + callee.name + "())");
        if (obj.is_object()) {
            if (const Value* member = obj.as_object().find(callee.name); member && member->is_callable())
                return member->as_callable().fn(eval_args(e, scope, 1));
        }
        Value result;
        if (call_method(obj, callee.name, eval_args(e, scope, 1), result)) return result;
        error_at(e.line, "'" + obj.type_name() + "' object has no method '" + callee.name + "'");
    }
    Value fn = eval(callee, scope);
    if (fn.is_undefined()) {
        std::string name = callee.kind == Expr::Kind::Name ? callee.name : fn.undefined_name();
        error_at(e.line, "'" + name + "' is undefined (unsupported function?)");
    }
    if (!fn.is_callable()) error_at(e.line, "'" + fn.type_name() + "' object is not callable");
    return fn.as_callable().fn(eval_args(e, scope, 1));
}

namespace {

bool both_numbers(const Value& a, const Value& b) {
    return (a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool());
}
int64_t to_int(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }
bool any_float(const Value& a, const Value& b) { return a.is_float() || b.is_float(); }

[[noreturn]] void bad_operands(int line, const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined() || b.is_undefined())
        error_at(line, "'" + (a.is_undefined() ? a.undefined_name() : b.undefined_name()) + "' is undefined (operand of '" + op + "')");
    error_at(line, "unsupported operand types for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

// seq * n. The size is checked before building: 'x' * 10**12 must not try to allocate it.
Value repeat(const Value& seq, int64_t n, int line) {
    if (seq.is_string()) {
        const std::string& s = seq.as_string();
        if (n > 0 && !s.empty() && static_cast<uint64_t>(n) > kMaxStringBytes / s.size())
            error_at(line, "string repetition longer than " +
                               std::to_string(kMaxStringBytes >> 20) + " MiB");
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += s;
        return Value(std::move(out));
    }
    const Array& a = seq.as_array();
    if (n > 0 && !a.empty() && static_cast<uint64_t>(n) > kMaxListItems / a.size())
        error_at(line, "list repetition longer than " + std::to_string(kMaxListItems) + " items");
    Array out;
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), a.begin(), a.end());
    return Value(std::move(out));
}

int compare_values(int line, const std::string& op, const Value& a, const Value& b) {
    if (both_numbers(a, b)) {
        if (any_float(a, b)) return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
        return to_int(a) < to_int(b) ? -1 : to_int(a) > to_int(b) ? 1 : 0;
    }
    if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
    if (a.is_array() && b.is_array()) {
        const Array &x = a.as_array(), &y = b.as_array();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
            if (!equals(x[i], y[i])) return compare_values(line, op, x[i], y[i]);
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    error_at(line, "'" + op + "' not supported between '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace

Value floor_division(int line, const std::string& op, const Value& a, const Value& b) {
    if (!both_numbers(a, b)) bad_operands(line, op, a, b);
    if (b.as_double() == 0) error_at(line, "division by zero");
    if (any_float(a, b)) {
        double q = std::floor(a.as_double() / b.as_double());
        return op == "//" ? Value(q) : Value(a.as_double() - q * b.as_double());
    }
    int64_t x = to_int(a), y = to_int(b);
    if (x == INT64_MIN && y == -1) {  // the quotient 2**63 overflows; the remainder is 0
        if (op == "%") return Value(int64_t{0});
        integer_overflow(line);
    }
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors
    return op == "//" ? Value(q) : Value(x - q * y);
}

bool contains(int line, const Value& container, const Value& item) {
    if (container.is_string()) {
        if (!item.is_string()) error_at(line, "'in <string>' requires a string on the left, not '" + item.type_name() + "'");
        return container.as_string().find(item.as_string()) != std::string::npos;
    }
    if (container.is_array()) {
        for (const Value& v : container.as_array())
            if (equals(v, item)) return true;
        return false;
    }
    if (container.is_object()) return item.is_string() && container.as_object().find(item.as_string()) != nullptr;
    if (container.is_undefined()) return false;
    error_at(line, "argument of type '" + container.type_name() + "' is not iterable");
}

namespace {

bool compare_op(int line, const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "<") return compare_values(line, op, a, b) < 0;
    if (op == "<=") return compare_values(line, op, a, b) <= 0;
    if (op == ">") return compare_values(line, op, a, b) > 0;
    if (op == ">=") return compare_values(line, op, a, b) >= 0;
    if (op == "in") return contains(line, b, a);
    return !contains(line, b, a);  // "not in"
}

}  // namespace

Value Interpreter::compare(const Expr& e, Scope& scope) {
    Value left = eval(*e.args[0], scope);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1], scope);
        // `x in list` scans the list: inside a loop over a long list that is quadratic work.
        if (right.is_array()) step(e.line, static_cast<int64_t>(right.as_array().size()));
        if (!compare_op(e.line, e.ops[i], left, right)) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Value Interpreter::binary(const Expr& e, Scope& scope) {
    const std::string& op = e.name;
    if (op == "and") {
        Value l = eval(*e.args[0], scope);
        return l.truthy() ? eval(*e.args[1], scope) : l;
    }
    if (op == "or") {
        Value l = eval(*e.args[0], scope);
        return l.truthy() ? l : eval(*e.args[1], scope);
    }
    Value a = eval(*e.args[0], scope), b = eval(*e.args[1], scope);
    int line = e.line;
    if (op == "~" || (op == "+" && a.is_string() && b.is_string())) {
        std::string out = a.str();
        append_bounded(out, b.str(), line);
        return Value(std::move(out));
    }
    if (op == "+") {
        if (both_numbers(a, b))
            return any_float(a, b) ? Value(a.as_double() + b.as_double())
                                   : Value(add_int(to_int(a), to_int(b), line));
        if (a.is_array() && b.is_array()) {
            if (b.as_array().size() > kMaxListItems - std::min(kMaxListItems, a.as_array().size()))
                error_at(line, "list longer than " + std::to_string(kMaxListItems) + " items");
            step(line,
                 static_cast<int64_t>(a.as_array().size() + b.as_array().size()));  // copies both
            Array out = a.as_array();
            out.insert(out.end(), b.as_array().begin(), b.as_array().end());
            return Value(std::move(out));
        }
        bad_operands(line, op, a, b);
    }
    if (op == "*") {
        if (both_numbers(a, b))
            return any_float(a, b) ? Value(a.as_double() * b.as_double())
                                   : Value(mul_int(to_int(a), to_int(b), line));
        // A sequence times an int, either way round.
        const bool sequence_first = (a.is_string() || a.is_array()) && b.is_int();
        if (sequence_first || ((b.is_string() || b.is_array()) && a.is_int())) {
            Value r = sequence_first ? repeat(a, b.as_int(), line) : repeat(b, a.as_int(), line);
            if (r.is_array()) step(line, static_cast<int64_t>(r.as_array().size()));
            return r;
        }
        bad_operands(line, op, a, b);
    }
    if (!both_numbers(a, b)) {
        if (op == "%" && a.is_string()) error_at(line, "printf-style '%' string formatting is not supported");
        bad_operands(line, op, a, b);
    }
    if (op == "-")
        return any_float(a, b) ? Value(a.as_double() - b.as_double())
                               : Value(sub_int(to_int(a), to_int(b), line));
    if (op == "/") {
        if (b.as_double() == 0) error_at(line, "division by zero");
        return Value(a.as_double() / b.as_double());
    }
    if (op == "//" || op == "%") return floor_division(line, op, a, b);
    if (op == "**") {
        if (!any_float(a, b) && to_int(b) >= 0) {
            int64_t base = to_int(a), exp = to_int(b);
            // |base| <= 1 never overflows (and would loop up to 2**63 times); otherwise overflow
            // comes within 63 multiplications.
            if (base == 0 || base == 1) return Value(exp == 0 ? int64_t{1} : base);
            if (base == -1) return Value(exp % 2 ? int64_t{-1} : int64_t{1});
            int64_t r = 1;
            for (int64_t i = 0; i < exp; ++i) r = mul_int(r, base, line);
            return Value(r);
        }
        // Where Python raises rather than give inf or NaN: 0 to a negative power
        // (ZeroDivisionError), a float result past the double range (OverflowError), and a
        // negative number to a fractional power (Python's result is complex, which a template
        // cannot hold).
        const double x = a.as_double(), y = b.as_double();
        if (x == 0 && y < 0) error_at(line, "0.0 cannot be raised to a negative power");
        if (x < 0 && std::isfinite(y) && y != std::floor(y))
            error_at(line, "a negative number to a fractional power has a complex result");
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
            error_at(line, "numerical result out of range (" + a.str() + " ** " + b.str() + ")");
        return Value(r);
    }
    error_at(line, "unknown operator '" + op + "'");
}

void Interpreter::step(int line, int64_t units) {
    steps_ += units;
    if (steps_ > kMaxSteps)
        error_at(line, "template takes too long (over " + std::to_string(kMaxSteps) +
                           " evaluation steps)");
}

Interpreter::Nest::Nest(Interpreter& in, int line) : depth(++in.eval_depth_) {
    if (depth > kMaxNesting) {
        --depth;  // the destructor does not run when the constructor throws
        error_at(line, "expressions and blocks nested too deeply");
    }
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
    Nest nest(*this, e.line);
    step(e.line);
    Value v = eval_node(e, scope);
    // Building or copying a string is work in proportion to its length (values hold strings by
    // value): without this, a loop that builds or copies near-limit strings does gigabytes of
    // work within the step bound.
    if (v.is_string()) step(e.line, static_cast<int64_t>(v.as_string().size() / kBytesPerStep));
    return v;
}

Value Interpreter::eval_node(const Expr& e, Scope& scope) {
    switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: {
            const Value* v = scope.find(e.name);
            return v ? *v : Value::undefined(e.name);
        }
        case Expr::Kind::List: {
            Array a;
            for (const auto& x : e.args) a.push_back(eval(*x, scope));
            return Value(std::move(a));
        }
        case Expr::Kind::Dict: {
            auto o = std::make_shared<Object>();
            for (const auto& [k, v] : e.entries) {
                Value key = eval(*k, scope);
                if (!key.is_string()) error_at(e.line, "dict keys must be strings, not '" + key.type_name() + "'");
                o->set(key.as_string(), eval(*v, scope));
            }
            return Value(o);
        }
        case Expr::Kind::GetAttr: return get_attribute(eval(*e.args[0], scope), e.name, e.line);
        case Expr::Kind::GetItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope), e.line);
        case Expr::Kind::Slice: {
            auto part = [&](int i) { return e.args[i] ? eval(*e.args[i], scope) : Value(nullptr); };
            return slice(eval(*e.args[0], scope), part(1), part(2), part(3), e.line);
        }
        case Expr::Kind::Call: return call(e, scope);
        case Expr::Kind::Filter: {
            Value input = eval(*e.args[0], scope);
            return apply_filter(e.name, input, eval_args(e, scope, 1));
        }
        case Expr::Kind::Test: {
            Value input = eval(*e.args[0], scope);
            bool r = apply_test(e.name, input, eval_args(e, scope, 1));
            return Value(e.negated ? !r : r);
        }
        case Expr::Kind::Unary: {
            Value v = eval(*e.args[0], scope);
            if (e.name == "not") return Value(!v.truthy());
            if (v.is_bool()) v = Value(static_cast<int64_t>(v.as_bool()));
            if (!v.is_number()) error_at(e.line, "bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
            if (e.name == "+") return v;
            return v.is_int() ? Value(sub_int(0, v.as_int(), e.line)) : Value(-v.as_double());
        }
        case Expr::Kind::Binary: return binary(e, scope);
        case Expr::Kind::Compare: return compare(e, scope);
        case Expr::Kind::Cond:
            if (eval(*e.args[0], scope).truthy()) return eval(*e.args[1], scope);
            return e.args[2] ? eval(*e.args[2], scope) : Value::undefined();
    }
    error_at(e.line, "unknown expression");
}

}  // namespace nextn::jinja
