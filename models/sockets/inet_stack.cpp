// The UDP/IP socket stack (inet_stack.h).
#include "models/sockets/inet_stack.h"

#include <algorithm>
#include <cmath>

#include "models/core/module_tree.h"
#include "models/core/timeline.h"
#include "models/mbcf/ether_system.h"

namespace mbpsim::sockets {

namespace {
// The IP header's total length of an Ethernet frame's packet (a short frame's padding is not
// the packet's).
uint32_t ip_total_length(const std::vector<uint8_t>& frame) {
  return frame.size() >= 18 ? static_cast<uint32_t>(frame[16] << 8 | frame[17]) : 0;
}
}  // namespace

using mbp2::InetError;

const char* to_string(Errno e) {
  switch (e) {
    case Errno::Ok: return "ok";
    case Errno::BadDescriptor: return "EBADF (not an open socket)";
    case Errno::AddrInUse: return "EADDRINUSE (the port is taken)";
    case Errno::AlreadyBound: return "EINVAL (the socket is bound already)";
    case Errno::MsgSize: return "EMSGSIZE (longer than the socket's send space)";
    case Errno::HostUnreach: return "EHOSTUNREACH (not another host of the segment)";
    case Errno::NoBufs: return "ENOBUFS (the interface queue was full)";
    case Errno::BadPort: return "EINVAL (port 0)";
    case Errno::Invalid: return "EINVAL (not a listening socket, or a read of 0 bytes)";
    case Errno::IsConn: return "EISCONN (the socket is connected already)";
    case Errno::NotConn: return "ENOTCONN (the socket is not connected)";
    case Errno::Pipe: return "EPIPE (this side has closed the connection)";
    case Errno::ConnRefused: return "ECONNREFUSED (nothing listens on the port)";
    case Errno::ConnReset: return "ECONNRESET (the peer reset the connection)";
    case Errno::TimedOut: return "ETIMEDOUT (the peer stopped answering)";
  }
  return "?";
}

std::vector<std::unique_ptr<InetStack>> InetStack::attach(Calendar& cal, mbcf::EtherSystem& sys, const SocketConfig& c,
                                                          Stats& st) {
  std::vector<std::unique_ptr<InetStack>> v;
  for (uint32_t n = 0; n < sys.nodes(); ++n) {
    Within in(sys.host(n));
    v.push_back(std::make_unique<InetStack>("inet", cal, sys, n, c, st));
  }
  std::vector<InetStack*> by_node;
  for (auto& s : v) by_node.push_back(s.get());
  sys.add_protocol(mbp2::kEtherTypeIpv4, [by_node](uint32_t node, std::vector<uint8_t>&& f) { return by_node[node]->rx_frame(std::move(f)); });
  return v;
}

InetStack::InetStack(sc_core::sc_module_name name, Calendar& cal, mbcf::EtherSystem& sys, uint32_t node, const SocketConfig& c,
                     Stats& st)
    : sc_core::sc_module(name),
      cal_(cal),
      sys_(sys),
      node_(node),
      c_(c),
      os_(sys.os(node)),
      cpu_(sys.cpu(node)),
      udp_out_(st.counter(stat_name(*this, "udp_sent"), "UDP datagrams sent")),
      frames_out_(st.counter(stat_name(*this, "frames_sent"), "IPv4 frames handed to the NIC (fragments counted one by one)")),
      frags_out_(st.counter(stat_name(*this, "fragments_sent"), "IP fragments sent (datagrams longer than the MTU)")),
      ifq_drops_(st.counter(stat_name(*this, "ifq_drops"), "frames dropped because the interface queue was full (the call failed with ENOBUFS)")),
      udp_in_(st.counter(stat_name(*this, "udp_received"), "UDP datagrams appended to a socket's receive buffer")),
      frames_in_(st.counter(stat_name(*this, "frames_received"), "IPv4 frames the driver took")),
      ipintrq_drops_(st.counter(stat_name(*this, "ipintrq_drops"), "frames dropped because ipintrq was full")),
      reassembled_(st.counter(stat_name(*this, "reassembled"), "datagrams reassembled from fragments")),
      reass_timeouts_(st.counter(stat_name(*this, "reass_timeouts"), "datagrams whose fragments did not all come within sockets.ipfrag_ttl_s (dropped)")),
      reass_bad_(st.counter(stat_name(*this, "reass_bad"), "datagrams dropped for fragments that overlap or disagree")),
      bad_(st.counter(stat_name(*this, "bad_frames"), "frames dropped by IP or UDP input: a bad header, length or checksum, or not UDP")),
      noport_(st.counter(stat_name(*this, "no_port"), "datagrams for a port no socket is bound to (dropped)")),
      fullsock_(st.counter(stat_name(*this, "full_socket"), "datagrams dropped because the socket's receive buffer was full (udp_recvspace)")),
      tx_ps_(st.counter(stat_name(*this, "tx_ps"), "host CPU time in sendto below the system call's entry and exit: sosend, the copy, UDP, IP, ether_output and the driver", "ps")),
      rx_intr_ps_(st.counter(stat_name(*this, "rx_intr_ps"), "host CPU time in the driver's receive path, in the receive interrupt routine", "ps")),
      netisr_ps_(st.counter(stat_name(*this, "netisr_ps"), "host CPU time in ipintr, ip_reass and udp_input, in netisr (its dispatch is the OS's softint_ps) or, with sockets.ip_input interrupt, in the driver's interrupt", "ps")),
      rx_ps_(st.counter(stat_name(*this, "rx_ps"), "host CPU time in recvfrom below the system call's entry and exit: soreceive and the copy out", "ps")),
      dvma_maps_(st.counter(stat_name(*this, "dvma_maps"), "buffers the driver's start routine mapped for the NIC's DMA (sockets.driver_max_maps)")),
      pullups_(st.counter(stat_name(*this, "driver_pullups"), "frames the driver's start routine copied into one buffer because they came in more than sockets.driver_max_maps mbufs")),
      tcp_(std::make_unique<Tcp>("tcp", cal, *this, os_, cpu_, node, sys.nodes(), c_, st)) {}

InetStack::Socket* InetStack::sock(int fd) {
  if (fd < 0 || static_cast<size_t>(fd) >= socks_.size()) return nullptr;
  return socks_[static_cast<size_t>(fd)].get();
}
const InetStack::Socket* InetStack::sock(int fd) const { return const_cast<InetStack*>(this)->sock(fd); }

int InetStack::open_descriptor(SocketKind k) {
  fds_.push_back(k);
  return static_cast<int>(fds_.size() - 1);
}

SocketKind InetStack::kind_of(int fd) const {
  return fd < 0 || static_cast<size_t>(fd) >= fds_.size() ? SocketKind::None : fds_[static_cast<size_t>(fd)];
}

int InetStack::udp_socket() {
  const int fd = open_descriptor(SocketKind::Udp);
  if (socks_.size() <= static_cast<size_t>(fd)) socks_.resize(static_cast<size_t>(fd) + 1);
  socks_[static_cast<size_t>(fd)] = std::make_unique<Socket>();
  socks_[static_cast<size_t>(fd)]->rcv_mb = MbufAccount(c_.udp_recvspace);
  return fd;
}

bool InetStack::port_taken(uint16_t port) const {
  for (const auto& s : socks_)
    if (s && s->port == port) return true;
  return false;
}

uint16_t InetStack::ephemeral() {
  // BSD's in_pcbbind: the next free port from IPPORT_RESERVED (1024) up to 5000, then again.
  for (;;) {
    const uint16_t p = next_ephemeral_;
    next_ephemeral_ = next_ephemeral_ >= 5000 ? 1024 : static_cast<uint16_t>(next_ephemeral_ + 1);
    if (!port_taken(p)) return p;
  }
}

Errno InetStack::bind(int fd, uint16_t port) {
  Socket* s = sock(fd);
  if (!s) return Errno::BadDescriptor;
  if (s->port) return Errno::AlreadyBound;
  if (port == 0) port = ephemeral();
  else if (port_taken(port)) return Errno::AddrInUse;
  s->port = port;
  return Errno::Ok;
}

uint16_t InetStack::port_of(int fd) const {
  const Socket* s = sock(fd);
  return s ? s->port : 0;
}

size_t InetStack::queued(int fd) const {
  const Socket* s = sock(fd);
  return s ? s->rcv.size() : 0;
}

uint64_t InetStack::cksum_ps(uint64_t bytes) const { return cpu_.cycles_ps(c_.cksum_cycles_per_byte * static_cast<double>(bytes)); }

uint64_t InetStack::rx_cksum_ps(uint64_t frame_bytes) {
  constexpr uint64_t kHeaders = 14 + 20;  // Ethernet and IP: read by the driver and ipintr
  const uint64_t covered = frame_bytes > kHeaders ? frame_bytes - kHeaders : 0;
  return cksum_ps(covered) + (c_.driver_copies ? 0 : os_.first_touch_ps(frame_bytes, kHeaders));
}

uint64_t InetStack::frame_out_ps(uint64_t bytes, uint32_t buffers) const {
  return cycles(c_.ip_output_instr) + link_out_ps(bytes, buffers);
}

uint64_t InetStack::link_out_ps(uint64_t bytes, uint32_t buffers) const {
  uint64_t ps = cycles(c_.ether_output_instr + c_.driver_tx_instr);
  if (c_.driver_copies) return ps + os_.copy_ps(bytes);
  if (c_.driver_max_maps == 0) return ps;
  if (buffers <= c_.driver_max_maps) {
    dvma_maps_.inc(buffers);
    return ps + cycles(c_.dvma_map_instr * buffers);
  }
  // hmestart's third case: a fresh buffer, the chain copied into it and freed, one mapping
  pullups_.inc();
  dvma_maps_.inc();
  return ps + cycles(c_.driver_pullup_instr + c_.dvma_map_instr) + os_.copy_ps(bytes);
}

bool InetStack::ifq_enter() {
  if (ifq_len_ >= c_.ifq_maxlen) {  // IF_QFULL: the frame is dropped
    ifq_drops_.inc();
    return false;
  }
  ++ifq_len_;
  return true;
}

void InetStack::to_nic(std::vector<uint8_t>&& frame, uint32_t dst) {
  frames_out_.inc();
  sys_.nic(node_).transmit(dst, std::move(frame), [this](bool) { --ifq_len_; });
}

bool InetStack::transmit(std::vector<uint8_t>&& frame, uint32_t dst) {
  if (!ifq_enter()) return false;
  to_nic(std::move(frame), dst);
  return true;
}

// ------------------------------------------------------------------ send

void InetStack::sendto(int fd, uint32_t dst_node, uint16_t dst_port, std::vector<uint8_t> data, std::function<void(Errno)> k) {
  auto err = std::make_shared<Errno>(Errno::Ok);
  os_.syscall(
      "sendto",
      [this, fd, dst_node, dst_port, data = std::move(data), err](std::function<void()> done) mutable {
        Socket* s = sock(fd);
        if (!s) *err = Errno::BadDescriptor;
        else if (data.size() > c_.udp_sendspace || data.size() > mbp2::kUdpMaxPayload) *err = Errno::MsgSize;
        else if (dst_node >= sys_.nodes() || dst_node == node_) *err = Errno::HostUnreach;
        else if (dst_port == 0) *err = Errno::BadPort;
        if (*err != Errno::Ok) return done();
        if (!s->port) s->port = ephemeral();
        mbp2::Datagram d;
        d.proto = mbp2::kIpProtoUdp;
        d.src_node = node_;
        d.dst_node = dst_node;
        d.src_port = s->port;
        d.dst_port = dst_port;
        d.ip_id = ip_id_++;
        d.udp_sum = c_.udp_cksum;
        const uint64_t n = data.size();
        auto frames = std::make_shared<std::vector<std::vector<uint8_t>>>(
            mbp2::fragment_ip(mbp2::build_inet(d, data.data(), static_cast<uint32_t>(n)), c_.mtu));
        udp_out_.inc();
        // sosend and the copy from the user's buffer, with a step of its loop for each mbuf after
        // the first (BSD's mbufs; a datagram goes whole: the send buffer is empty); udp_output,
        // with the checksum over header and data when sockets.udp_cksum; ip_output's fixed part
        // (its per-fragment part is paid frame by frame).
        uint32_t taken = 0;
        auto chain = std::make_shared<const std::vector<MbufAccount::Mbuf>>(  // the data's mbufs
            c_.mbuf_accounting ? MbufAccount::sosend_chain(n, c_.udp_sendspace, taken)
            : n > 0            ? std::vector<MbufAccount::Mbuf>{{mbuf::kMminoff, static_cast<uint32_t>(n), false}}
                               : std::vector<MbufAccount::Mbuf>{});
        const size_t mbufs = std::max<size_t>(chain->size(), 1);
        const uint64_t ps = cycles(c_.sosend_instr + c_.stream_write_instr + c_.mbuf_steps_instr(mbufs)) +
                            os_.copy_ps(n) + cycles(c_.udp_output_instr) +
                            (c_.udp_cksum ? cksum_ps(n + mbp2::kUdpHeader) : 0) + cycles(c_.ip_output_instr);
        tx_ps_.inc(ps);
        os_.kernel(ps, [this, frames, chain, dst_node, err, done = std::move(done)]() mutable {
          output_frames(frames, chain, dst_node, 0, [err, done = std::move(done)](Errno e) {
            *err = e;
            done();
          });
        });
      },
      [err, k = std::move(k)] { k(*err); });
}

uint32_t InetStack::udp_frame_buffers(const std::vector<MbufAccount::Mbuf>& chain, size_t i, size_t frames) const {
  if (frames == 1) return 1 + static_cast<uint32_t>(chain.size());
  // Fragment i carries the IP payload [q i, q (i + 1)): a fresh header mbuf, the mbuf of the
  // 8-byte UDP header (udp_output's) for the first, and the data mbufs its piece spans.
  const uint64_t q = (c_.mtu - mbp2::kIpHeader) & ~7u, h = mbp2::kUdpHeader;
  const uint64_t lo = q * i, hi = q * (i + 1);
  const uint64_t data_lo = lo > h ? lo - h : 0;
  return 1 + (lo < h ? 1 : 0) + MbufAccount::span_of(chain, data_lo, hi - h - data_lo);
}

void InetStack::output_frames(std::shared_ptr<std::vector<std::vector<uint8_t>>> frames,
                              std::shared_ptr<const std::vector<MbufAccount::Mbuf>> chain, uint32_t dst, size_t i,
                              std::function<void(Errno)> k) {
  if (i == frames->size()) return k(Errno::Ok);
  if (!ifq_enter()) return k(Errno::NoBufs);  // this frame and the rest of the datagram are lost
  const bool fragmented = frames->size() > 1;
  const uint64_t ps = link_out_ps((*frames)[i].size(), udp_frame_buffers(*chain, i, frames->size())) +
                      (fragmented ? cycles(c_.frag_instr) : 0);
  tx_ps_.inc(ps);
  os_.kernel(ps, [this, frames, chain, dst, i, fragmented, k = std::move(k)]() mutable {
    if (fragmented) frags_out_.inc();
    to_nic(std::move((*frames)[i]), dst);
    output_frames(frames, chain, dst, i + 1, std::move(k));
  });
}

// ------------------------------------------------------------------ receive

uint64_t InetStack::rx_frame(std::vector<uint8_t>&& frame) {
  frames_in_.inc();
  uint64_t ps = cycles(c_.driver_rx_instr);
  if (c_.driver_copies) ps += os_.copy_ps(frame.size(), host::Os::Data::Cold);  // out of the NIC's DMA buffer
  rx_intr_ps_.inc(ps);
  if (ipintrq_.size() >= c_.ipintrq_maxlen) {
    ipintrq_drops_.inc();
    return ps;
  }
  ipintrq_.push_back(std::move(frame));
  if (!netisr_posted_) {
    netisr_posted_ = true;
    // schednetisr: the software interrupt runs once the hardware routine that posted it (whose
    // cost the host's receive routine queues when this returns) has ended. Under Solaris the
    // driver's routine goes on with the frame itself (putnext to ip_rput): no dispatch.
    cal_.at(cal_.now_ps(), [this] {
      if (c_.ip_input_in_interrupt) return netisr();
      os_.softint(0, [this] { netisr(); });
    });
  }
  return ps;
}

namespace {
// A whole (unfragmented) IP datagram whose protocol byte says TCP.
bool carries_tcp(const std::vector<uint8_t>& frame) {
  constexpr size_t kIpProtoAt = 14 + 9;
  return !mbp2::is_fragment(frame) && frame.size() > kIpProtoAt && frame[kIpProtoAt] == mbp2::kIpProtoTcp;
}
}  // namespace

void InetStack::netisr() {
  if (ipintrq_.empty()) {
    netisr_posted_ = false;
    return;
  }
  std::vector<uint8_t> f = std::move(ipintrq_.front());
  ipintrq_.pop_front();
  // (On a timeline: what the software interrupt took in, named before ip_input consumes it.)
  const char* what = !timeline()             ? nullptr
                     : mbp2::is_fragment(f) ? "ipintr: IP fragment"
                     : carries_tcp(f)       ? "ipintr: tcp_input"
                                            : "ipintr: udp_input";
  std::function<void()> effect;
  const uint64_t ps = ip_input(f, effect);
  netisr_ps_.inc(ps);
  cpu_.interrupt(ps, [this, effect = std::move(effect), what, ps] {
    if (what)
      if (Timeline* tl = timeline()) tl->slice(tl->track(cpu_.name()), what, cpu_.now_ps() - std::min(cpu_.now_ps(), ps), cpu_.now_ps());
    if (effect) effect();
    netisr();
  });
}

uint64_t InetStack::ip_input(std::vector<uint8_t>& frame, std::function<void()>& effect) {
  uint64_t ps = cycles(c_.ipintr_instr);
  if (carries_tcp(frame)) {
    if (tcp_->co_eligible(frame)) {  // Solaris: tcp_rput queues it for the reader (sockets.tcp_rcv_co)
      ps += tcp_->co_enqueue_ps();
      effect = [this, f = std::move(frame)]() mutable { tcp_->co_enqueue(std::move(f)); };
      return ps;
    }
    bool fast = false;
    ps += tcp_->input_ps(frame, fast);  // tcp_input, header prediction deciding its length
    effect = [this, fast, f = std::move(frame)]() mutable { tcp_->input(std::move(f), fast); };
    return ps;
  }
  if (!mbp2::is_fragment(frame)) {
    ps += udp_input_ps(frame);
    effect = [this, f = std::move(frame)]() mutable {
      const uint32_t ip_len = ip_total_length(f);
      udp_input(std::move(f), {ip_len});
    };
    return ps;
  }
  ps += cycles(c_.reass_instr);
  mbp2::Fragment fr;
  if (mbp2::parse_fragment(frame, fr) != InetError::None || fr.proto != mbp2::kIpProtoUdp) {
    effect = [this] { bad_.inc(); };
    return ps;
  }
  const auto key = std::make_pair(fr.src_node, fr.ip_id);
  Reass& r = reass_[key];
  if (r.frames.empty()) {
    r.gen = ++reass_gen_;
    // ip_slowtimo: a datagram still incomplete when its time to live runs out is dropped.
    const uint64_t gen = r.gen;
    cal_.at(cal_.now_ps() + static_cast<uint64_t>(std::llround(c_.ipfrag_ttl_s * 1e12)), [this, key, gen] {
      auto it = reass_.find(key);
      if (it == reass_.end() || it->second.gen != gen) return;
      reass_.erase(it);
      reass_timeouts_.inc();
    });
  }
  const uint32_t tag = static_cast<uint32_t>(r.frames.size());
  const auto add = r.r.add(fr.offset, fr.len, fr.more, tag);
  if (add == mbp2::Reassembly::Add::Duplicate) return ps;
  if (add == mbp2::Reassembly::Add::Bad) {
    reass_.erase(key);
    effect = [this] { reass_bad_.inc(); };
    return ps;
  }
  r.frames.push_back(std::move(frame));
  if (add != mbp2::Reassembly::Add::Complete) return ps;
  std::vector<std::vector<uint8_t>> pieces;
  std::vector<uint32_t> ip_lens;
  for (const auto& pc : r.r.pieces()) {
    pieces.push_back(std::move(r.frames[pc.tag]));
    ip_lens.push_back(ip_total_length(pieces.back()));
  }
  reass_.erase(key);
  std::vector<uint8_t> whole = mbp2::join_fragments(pieces);
  ps += udp_input_ps(whole);
  effect = [this, w = std::move(whole), ip_lens = std::move(ip_lens)]() mutable {
    reassembled_.inc();
    udp_input(std::move(w), std::move(ip_lens));
  };
  return ps;
}

bool InetStack::udp_checks(const std::vector<uint8_t>& datagram) const { return c_.udp_cksum && mbp2::udp_summed(datagram); }

uint64_t InetStack::udp_input_ps(const std::vector<uint8_t>& datagram) {
  return cycles(c_.udp_input_instr) + (udp_checks(datagram) ? rx_cksum_ps(datagram.size()) : 0);
}

void InetStack::udp_input(std::vector<uint8_t>&& datagram, std::vector<uint32_t> frag_ip_lens) {
  mbp2::Parsed p;
  // (parse_inet checks the transport checksum only where udp_input does: its cost is udp_input_ps's)
  const bool checked = udp_checks(datagram);
  if (mbp2::parse_inet(datagram, p, checked) != InetError::None || p.d.proto != mbp2::kIpProtoUdp || p.d.dst_node != node_) {
    bad_.inc();
    return;
  }
  Socket* s = nullptr;
  int fd = -1;
  for (size_t i = 0; i < socks_.size(); ++i)
    if (socks_[i] && socks_[i]->port == p.d.dst_port) {
      s = socks_[i].get();
      fd = static_cast<int>(i);
    }
  if (!s) {
    noport_.inc();
    return;
  }
  // sbappendaddr: the datagram and an mbuf with the sender's address (a sockaddr_in, 16 bytes).
  // With sockets.mbuf_accounting, SunOS's sbspace: its mbuf storage left bounds it too.
  constexpr uint32_t kAddrBytes = mbuf::kSockaddr;
  const uint32_t need = p.payload_len + kAddrBytes;
  // Solaris: IP's canputnext asks whether the stream head's queue is below its high-water mark.
  const bool full = c_.udp_streams_rcv ? s->rcv_bytes >= c_.udp_recvspace : s->rcv_bytes + need > c_.udp_recvspace;
  if (full || (c_.mbuf_accounting && static_cast<int64_t>(need) > s->rcv_mb.room())) {
    fullsock_.inc();
    return;
  }
  if (c_.mbuf_accounting) {
    // the address mbuf starts the record; each fragment's frame is its own mbufs (the first
    // carries the UDP header, every one its IP header)
    std::vector<MbufAccount::Mbuf> chain{{mbuf::kMminoff, kAddrBytes, false}};
    uint32_t left = p.payload_len;
    for (size_t i = 0; i < frag_ip_lens.size(); ++i) {
      const uint32_t hdr = i == 0 ? mbuf::kUdpIpHdr : 20;
      const uint32_t d = std::min(left, frag_ip_lens[i] > hdr ? frag_ip_lens[i] - hdr : 0);
      for (const auto& m : MbufAccount::rx_chain(frag_ip_lens[i], d, c_.driver_rx_copy_max, hdr)) chain.push_back(m);
      left -= d;
    }
    s->rcv_mb.append(chain, true);
  }
  Queued q;
  q.r.src_node = p.d.src_node;
  q.r.src_port = p.d.src_port;
  q.r.data.assign(datagram.begin() + p.payload_off, datagram.begin() + p.payload_off + p.payload_len);
  // Unless the checksum or the driver's copy read it, the data is still as the NIC's DMA wrote it.
  q.untouched_frame_bytes = checked || c_.driver_copies ? 0 : datagram.size();
  s->rcv_bytes += p.payload_len + kAddrBytes;
  s->rcv.push_back(std::move(q));
  udp_in_.inc();
  os_.wakeup(chan(fd));  // sorwakeup: a reader,
  os_.wakeup(select_chan());  // and selwakeup: a process in select()
}

void InetStack::recvfrom(int fd, std::function<void(Errno, Received)> k) {
  auto out = std::make_shared<std::pair<Errno, Received>>();
  os_.syscall(
      "recvfrom",
      [this, fd, out](std::function<void()> done) {
        // soreceive: sleeps while the receive buffer is empty, then takes the first datagram
        // and copies it out. (The sleeper holds the routine; it holds itself only weakly.)
        auto take = std::make_shared<std::function<void()>>();
        std::weak_ptr<std::function<void()>> self = take;
        *take = [this, fd, out, self, done = std::move(done)]() mutable {
          Socket* s = sock(fd);
          if (!s) {
            out->first = Errno::BadDescriptor;
            return done();
          }
          if (s->rcv.empty()) {
            os_.sleep(chan(fd), [t = self.lock()] { (*t)(); });
            return;
          }
          const uint64_t untouched = s->rcv.front().untouched_frame_bytes;
          // soreceive's loop visits each data mbuf of the record (the address mbuf's disposal is the base's)
          const uint32_t data_mbufs = c_.mbuf_accounting ? s->rcv_mb.span(s->rcv.front().r.data.size() + mbuf::kSockaddr) - 1 : 1;
          out->second = std::move(s->rcv.front().r);
          s->rcv.pop_front();
          s->rcv_bytes -= static_cast<uint32_t>(out->second.data.size()) + mbuf::kSockaddr;
          s->rcv_mb.drop(out->second.data.size() + mbuf::kSockaddr);  // the record, whole
          // the copy out, and the first touch of the data no checksum read (the Ethernet, IP and
          // UDP headers ipintr and udp_input read are warm)
          constexpr uint64_t kHeadersRead = 14 + mbp2::kIpHeader + mbp2::kUdpHeader;
          const uint64_t ps = cycles(c_.soreceive_instr + c_.mbuf_steps_instr(data_mbufs)) + os_.copy_ps(out->second.data.size()) +
                              (untouched ? os_.first_touch_ps(untouched, kHeadersRead) : 0);
          rx_ps_.inc(ps);
          os_.kernel(ps, [d = std::move(done)]() mutable { d(); });
        };
        (*take)();
      },
      [out, k = std::move(k)] { k(out->first, std::move(out->second)); });
}

bool InetStack::select_open(int fd) const {
  switch (kind_of(fd)) {
    case SocketKind::Udp: return sock(fd) != nullptr;
    case SocketKind::Tcp: return tcp_->select_open(fd);
    case SocketKind::None: break;
  }
  return false;
}

bool InetStack::select_readable(int fd) const {
  return kind_of(fd) == SocketKind::Udp ? !sock(fd)->rcv.empty() : tcp_->select_readable(fd);
}

void InetStack::select(std::vector<int> fds, std::optional<double> timeout_us, std::function<void(Errno, int)> k) {
  auto out = std::make_shared<std::pair<Errno, int>>(Errno::Ok, -1);
  auto set = std::make_shared<std::vector<int>>(std::move(fds));
  os_.syscall(
      "select",
      [this, set, out, timeout_us](std::function<void()> done) {
        for (int fd : *set)
          if (!select_open(fd)) out->first = Errno::BadDescriptor;
        if (set->empty() || !select_timeout_ok(timeout_us)) out->first = Errno::Invalid;
        if (out->first != Errno::Ok) return done();
        // selscan: each descriptor's poll routine (soo_select), on the first pass and after each wakeup
        auto ready = [this, set] {
          for (int fd : *set)
            if (select_readable(fd)) return fd;
          return -1;
        };
        os_.select_loop(ready, set->size(), select_chan(), timeout_us, [out, done = std::move(done)](int fd) {
          out->second = fd;
          done();
        });
      },
      [out, k = std::move(k)] { k(out->first, out->second); });
}

}  // namespace mbpsim::sockets
