#pragma once
// Tree-walking evaluator for parsed chat templates.
#include <memory>
#include <string>
#include <unordered_map>

#include "tokenizer/jinja_ast.h"
#include "tokenizer/jinja_value.h"

namespace nextn::jinja {

// Variables visible at one level: the globals, a for-loop body, a macro call. Lookups walk up.
struct Scope {
    std::unordered_map<std::string, Value> vars;
    Scope* parent = nullptr;
    const Value* find(const std::string& name) const;
};

class Interpreter {
public:
    // `globals` are the render variables (messages, tools, ...) plus the built-in functions.
    explicit Interpreter(Scope& globals) : globals_(globals) {}
    std::string render(const Body& body);

    Value eval(const Expr& e, Scope& scope);

private:
    Value eval_node(const Expr& e, Scope& scope);
    enum class Flow { Normal, Break, Continue };
    Flow exec(const Body& body, Scope& scope, std::string& out);
    Flow exec(const Stmt& s, Scope& scope, std::string& out);
    void exec_for(const Stmt& s, Scope& scope, std::string& out);
    void exec_set(const Stmt& s, Scope& scope, const Value& v);
    Value call(const Expr& e, Scope& scope);
    Value binary(const Expr& e, Scope& scope);
    Value compare(const Expr& e, Scope& scope);
    Value define_macro(const Stmt& s);
    CallArgs eval_args(const Expr& e, Scope& scope, std::size_t first);
    // Counts `units` of work toward kMaxSteps (jinja_limits.h), failing beyond it.
    void step(int line, int64_t units = 1);
    // One level of expression or block nesting, failing beyond the bound (so deep nesting cannot
    // overflow the stack); undone when it goes out of scope.
    struct Nest {
        Nest(Interpreter& in, int line);
        ~Nest() { --depth; }
        int& depth;
    };

    Scope& globals_;
    Scope* top_ = nullptr;  // template-level scope of the render in progress (macros see it)
    int depth_ = 0;         // macro call depth, bounded to fail cleanly on runaway recursion
    // Expression and block nesting, bounded so long chains cannot exhaust the stack.
    int eval_depth_ = 0;
    // Work done by this render, bounded so a runaway template ends.
    int64_t steps_ = 0;
};

[[noreturn]] void error_at(int line, const std::string& what);

// Python's a // b or a % b (`op`) of two numbers, bools counting as ints: floored; an error for
// other operands and for division by zero.
Value floor_division(int line, const std::string& op, const Value& a, const Value& b);

// Python's `item in container` (the `in` operator and the `in` test): a substring of a string
// (a non-string item is an error, as Python's TypeError), an element of a list, a key of a dict;
// false in an undefined value; any other container is an error.
bool contains(int line, const Value& container, const Value& item);

}  // namespace nextn::jinja
