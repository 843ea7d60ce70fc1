// The composition graph as a Boost.Graph, written in Graphviz dot format.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <sstream>

#include "clampai/composition/compose.hpp"

namespace clampai::composition {

namespace {

struct VertexProps {
  std::string label;
  std::string shape;
};
struct EdgeProps {
  std::string label;
  bool back = false;  // the loop of a `repeat`
};
using Graph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexProps, EdgeProps>;
using Vertex = Graph::vertex_descriptor;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

class Builder {
 public:
  explicit Builder(const Manifest& m) : m_(m) {}
  Graph g;

  // Adds `n`; returns its entry and exit vertices.
  std::pair<Vertex, Vertex> add(const Node& n) {
    switch (n.kind) {
      case NodeKind::task: {
        const Vertex v = vertex(m_.tasks[n.task].name, "box");
        return {v, v};
      }
      case NodeKind::sequential: {
        auto first = add(n.children.front());
        Vertex last = first.second;
        for (std::size_t i = 1; i < n.children.size(); ++i) {
          auto next = add(n.children[i]);
          edge(last, next.first, "");
          last = next.second;
        }
        return {first.first, last};
      }
      case NodeKind::parallel: {
        const Vertex fork = vertex("parallel", "triangle");
        const Vertex join = vertex("join", "invtriangle");
        for (const Node& c : n.children) {
          auto [in, out] = add(c);
          edge(fork, in, "");
          edge(out, join, "");
        }
        return {fork, join};
      }
      case NodeKind::conditional: {
        const Vertex test = vertex("if " + kernel::to_source(*n.guard), "diamond");
        const Vertex merge = vertex("", "point");
        auto [tin, tout] = add(n.children[0]);
        edge(test, tin, "then");
        edge(tout, merge, "");
        if (n.children.size() > 1) {
          auto [ein, eout] = add(n.children[1]);
          edge(test, ein, "else");
          edge(eout, merge, "");
        } else {
          edge(test, merge, "else");
        }
        return {test, merge};
      }
      case NodeKind::repeat: {
        auto [in, out] = add(n.children.front());
        const Vertex loop = vertex("repeat x" + std::to_string(n.times), "ellipse");
        edge(out, loop, "");
        g[boost::add_edge(loop, in, g).first] = EdgeProps{"again", true};
        return {in, loop};
      }
      case NodeKind::group: {
        const Vertex start = vertex(m_.groups[n.group].name, "doubleoctagon");
        auto [in, out] = add(n.children.front());
        edge(start, in, "");
        return {start, out};
      }
    }
    return {0, 0};
  }

 private:
  const Manifest& m_;
  Vertex vertex(std::string label, std::string shape) {
    const Vertex v = boost::add_vertex(g);
    g[v] = VertexProps{std::move(label), std::move(shape)};
    return v;
  }
  void edge(Vertex a, Vertex b, std::string label) {
    g[boost::add_edge(a, b, g).first] = EdgeProps{std::move(label), false};
  }
};

}  // namespace

std::string to_dot(const Manifest& manifest) {
  Builder b(manifest);
  b.add(manifest.root);
  const Graph& g = b.g;
  std::ostringstream out;
  boost::write_graphviz(
      out,
      g,
      [&](std::ostream& os, Vertex v) {
        os << "[label=\"" << escape(g[v].label) << "\", shape=" << g[v].shape << "]";
      },
      [&](std::ostream& os, Graph::edge_descriptor e) {
        os << "[label=\"" << escape(g[e].label) << "\"" << (g[e].back ? ", style=dashed" : "")
           << "]";
      },
      [&](std::ostream& os) { os << "rankdir=LR;\n"; });
  return out.str();
}

}  // namespace clampai::composition
