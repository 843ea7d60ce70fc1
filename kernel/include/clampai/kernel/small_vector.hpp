// A vector with room for N elements inline: no allocation until it holds more. The project's
// own, so that no public header includes a third-party one (it replaced Boost's small_vector in
// `Changes`, the values one decision writes, on the kernel's hot path).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace clampai::kernel {

/// Contiguous, like std::vector (iterators are pointers): `begin`, `end`, `data`, `size`,
/// `empty`, `capacity`, `operator[]`, `front`, `back`, `reserve`, `clear`, `push_back`,
/// `emplace_back`, `pop_back`, `==`. Requires T to be nothrow move-constructible (elements move
/// when it grows or is moved). A moved-from vector is empty.
template <typename T, std::size_t N>
class SmallVector {
  static_assert(N > 0, "SmallVector needs room for at least one element inline");
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "SmallVector moves its elements when it grows: T's move must not throw");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  // User-provided, so that `SmallVector v{}` does not zero the inline room first.
  SmallVector() noexcept {}  // NOLINT(modernize-use-equals-default)
  SmallVector(std::initializer_list<T> items) {
    reserve(items.size());
    for (const T& x : items) emplace_back(x);
  }
  SmallVector(const SmallVector& other) {
    reserve(other.size_);
    std::uninitialized_copy(other.begin(), other.end(), data_);
    size_ = other.size_;
  }
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      reserve(other.size_);
      std::uninitialized_copy(other.begin(), other.end(), data_);
      size_ = other.size_;
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() {
    std::destroy(begin(), end());
    if (on_heap()) ::operator delete (data_, std::align_val_t{alignof(T)});
  }

  [[nodiscard]] iterator begin() noexcept { return data_; }
  [[nodiscard]] iterator end() noexcept { return data_ + size_; }
  [[nodiscard]] const_iterator begin() const noexcept { return data_; }
  [[nodiscard]] const_iterator end() const noexcept { return data_ + size_; }
  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] size_type size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] size_type capacity() const noexcept { return capacity_; }
  [[nodiscard]] T& operator[](size_type i) noexcept { return data_[i]; }
  [[nodiscard]] const T& operator[](size_type i) const noexcept { return data_[i]; }
  [[nodiscard]] T& front() noexcept { return data_[0]; }
  [[nodiscard]] const T& front() const noexcept { return data_[0]; }
  [[nodiscard]] T& back() noexcept { return data_[size_ - 1]; }
  [[nodiscard]] const T& back() const noexcept { return data_[size_ - 1]; }

  /// Room for `n` elements without another allocation.
  void reserve(size_type n) {
    if (n > capacity_) grow(n);
  }
  /// Destroys the elements; keeps the room.
  void clear() noexcept {
    std::destroy(begin(), end());
    size_ = 0;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) [[unlikely]]
      return grow_and_emplace(std::forward<Args>(args)...);
    T* slot = ::new (static_cast<void*>(data_ + size_)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(const T& x) { emplace_back(x); }
  void push_back(T&& x) { emplace_back(std::move(x)); }
  void pop_back() noexcept {
    --size_;
    std::destroy_at(data_ + size_);
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_type i = 0; i < a.size_; ++i)
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }

 private:
  // The slow path of emplace_back, out of line: the new element is constructed in the new room
  // first (`args` may refer to an element of this vector), then the others move there.
  template <typename... Args>
  [[gnu::noinline]] T& grow_and_emplace(Args&&... args) {
    const size_type n = capacity_ * 2;
    T* room = static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
    ::new (static_cast<void*>(room + size_)) T(std::forward<Args>(args)...);
    std::uninitialized_move(begin(), end(), room);
    std::destroy(begin(), end());
    if (on_heap()) ::operator delete (data_, std::align_val_t{alignof(T)});
    data_ = room;
    capacity_ = n;
    return data_[size_++];
  }
  [[nodiscard]] T* inline_data() noexcept { return reinterpret_cast<T*>(inline_); }
  [[nodiscard]] bool on_heap() const noexcept {
    return data_ != reinterpret_cast<const T*>(inline_);
  }
  // Moves the elements to new room for `n` (> capacity); the old room is released.
  void grow(size_type n) {
    T* room = static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{alignof(T)}));
    std::uninitialized_move(begin(), end(), room);
    std::destroy(begin(), end());
    release();
    data_ = room;
    capacity_ = n;
  }
  void release() noexcept {
    if (on_heap()) ::operator delete (data_, std::align_val_t{alignof(T)});
    data_ = inline_data();
    capacity_ = N;
  }
  // Takes `other`'s elements (its room when on the heap); `other` is left empty and inline.
  void take(SmallVector& other) noexcept {
    if (other.on_heap()) {
      data_ = other.data_;
      capacity_ = other.capacity_;
      size_ = other.size_;
      other.data_ = other.inline_data();
      other.capacity_ = N;
      other.size_ = 0;
      return;
    }
    std::uninitialized_move(other.begin(), other.end(), data_);
    size_ = other.size_;
    other.clear();
  }

  T* data_ = inline_data();
  size_type size_ = 0;
  size_type capacity_ = N;
  alignas(T) std::byte inline_[N * sizeof(T)];
};

}  // namespace clampai::kernel
