// A conventional host's UDP/IP socket stack (module `host<n>.inet`), BSD 4.3-derived as in SunOS
// 4.1.4: the stack the thesis's UDP10/UDP100 figures run on (6.2.3, 6.2.4, 6.2.6), beside the
// MBCF kernel on the same host, NIC and wire. Frames are byte-exact IPv4/UDP with real checksums
// (models/mbp2/inet.h builds, fragments, parses and reassembles them).
//
// Send, in the caller's system call (host::Os::syscall): sosend (socket buffer check, mbufs,
// the copy from the user's buffer), udp_output (header, checksum over the whole datagram),
// ip_output (route, header; a datagram larger than the interface's MTU cut into fragments,
// RFC 791), ether_output (ARP cache hit, the Ethernet header, the interface queue: IFQ_MAXLEN
// frames; a full queue drops the fragment and the call fails with ENOBUFS), the driver's start
// routine (mapping the mbufs for the NIC's DMA, or copying them into the NIC's buffers when the
// driver copies, as the SS20's LANCE driver does) and the NIC.
//
// Receive, at interrupt level: the NIC's receive interrupt (the host's receive routine hands
// every IPv4 frame here) runs the driver's receive path and queues the frame on ipintrq
// (IFQ_MAXLEN: a full queue drops it) and posts the software interrupt (with sockets.ip_input
// interrupt, Solaris's STREAMS, the driver's routine hands the frame up itself: no software
// interrupt); netisr's ipintr checks
// the IP header, reassembles fragments (a datagram whose pieces do not all come within
// sockets.ipfrag_ttl_s is dropped), and udp_input checks the checksum, finds the socket bound
// to the port (none: dropped), appends the datagram to its receive buffer (udp_recvspace: a
// full buffer drops it) and wakes the process sleeping in recvfrom.
//
// Every cost is a path length in instructions (sockets.*, an estimate from the BSD code's
// structure, each named next to its value) at the host's kernel CPI (host.kernel_cpi), or a
// copy at the kernel's rate; the checksum costs cycles per byte it covers.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <systemc>

#include "models/core/calendar.h"
#include "models/core/params.h"
#include "models/core/stats.h"
#include "models/host/cpu.h"
#include "models/host/os.h"
#include "models/mbp2/inet.h"
#include "models/sockets/tcp.h"

namespace mbpsim::mbcf {
class EtherSystem;
}

namespace mbpsim::sockets {

struct SocketConfig {
  // Every member is a parameter of `params()` (socket_params.cpp), which gives it its default.
  SocketConfig();
  // path lengths (instructions)
  double tcp_output_instr{}, tcp_input_instr{}, tcp_predict_instr{};
  double sosend_instr{}, udp_output_instr{}, ip_output_instr{}, frag_instr{}, ether_output_instr{};
  double driver_tx_instr{}, driver_rx_instr{}, ipintr_instr{}, reass_instr{}, udp_input_instr{};
  double soreceive_instr{}, rudp_instr{};
  double mbuf_instr{};  // with mbuf_accounting: sosend's and soreceive's loop for each mbuf after the first
  double stream_write_instr{};  // Solaris: the write side of a socket over a stream, per message handed down
  double stream_piece_instr{};  // Solaris: strwrite's loop for each further piece of one write
  double cksum_cycles_per_byte{};
  bool driver_copies{};  // the driver copies frames to and from the NIC's own buffers
  uint32_t driver_max_maps{};  // the most buffers of a frame the driver maps one by one (more: copied into one); 0: per frame only
  double dvma_map_instr{};     // per buffer the driver maps for the NIC's DMA (with driver_max_maps)
  double driver_pullup_instr{};  // a frame of more buffers copied into one (with driver_max_maps), beside the copy
  uint32_t driver_rx_copy_max{};  // the longest received IP packet the driver copies into small mbufs (longer: its buffer loaned up)
  bool udp_cksum{};      // UDP checksums made and checked (SunOS 4.1.4's udp_cksum: off)
  bool ip_input_in_interrupt{};  // IP input in the driver's interrupt (Solaris's STREAMS), not in netisr (BSD)
  bool udp_streams_rcv{};  // a datagram is dropped: when it does not fit (BSD) or when the stream head's queue is at its mark (Solaris)
  // BSD's limits
  uint32_t ifq_maxlen{}, ipintrq_maxlen{}, udp_sendspace{}, udp_recvspace{}, mtu{};
  double ipfrag_ttl_s{};
  // TCP's buffers, segment size and timers
  bool mbuf_accounting{};  // sbspace counts mbuf storage (SunOS 4.1.4) or bytes only (Solaris): mbuf_account.h
  bool tahoe_window_update{};    // tcp_output's window-update rule: 4.3BSD-Tahoe's (SunOS 4.1.4) or Reno's
  bool tcp_header_prediction{};  // tcp_input's fast path (4.3BSD-Reno's; SunOS 4.1.4's Tahoe tcp_input has none)
  bool solaris_deferred_ack{};   // the ACK of in-order data: BSD's delayed ACK or Solaris's deferred-ACK rule
  bool tcp_rwnd_whole_mss{};     // Solaris: the receive buffer rounded up to whole segments
  bool streams_rcv_flow{};       // the window: BSD's space left, or Solaris's stream-head flow control
  bool tcp_cksum_in_copy{};      // Solaris: the data's checksum computed in the copy from the user
  bool tcp_rcv_co{};             // Solaris: in-order data waits on the co queue for the reader's copy out
  uint32_t tcp_co_min{};         // Solaris: the shortest segment the co queue takes (tcp_co_min)
  double tcp_co_instr{};         // Solaris: tcp_rput's work for a segment it puts on the co queue
  bool streams_snd_flow{};       // the writer's flow control: BSD's send buffer, or Solaris's unsent bytes
  bool solaris_output{};         // what tcp_output sends: BSD's rules, or Solaris's tcp_wput_data (whole mblks)
  uint32_t tcp_maxpsz_multiplier{};  // Solaris: the stream head's largest write, in segments
  uint32_t tcp_initial_cwnd{};  // bytes a new connection may send before its first ACK
  uint32_t tcp_sendspace{}, tcp_recvspace{}, tcp_send_lowat{}, tcp_mss{}, tcp_dupack_thresh{}, tcp_max_rexmt{};
  double tcp_delack_ms{}, tcp_slowtimo_ms{}, tcp_rto_min_s{}, tcp_rto_initial_s{}, tcp_rto_max_s{}, tcp_persist_min_s{}, tcp_msl_s{};
  // With BSD's mbufs: the socket layer's loop steps for a call over `mbufs` mbufs (the first is
  // the call's own work), in instructions.
  double mbuf_steps_instr(size_t mbufs) const { return mbuf_instr * static_cast<double>(mbufs > 1 ? mbufs - 1 : 0); }
  static const ParamTable<SocketConfig>& params();
  static SocketConfig from(const Config& c);
};
void declare_socket_params(ParamSchema& s);

// What a socket call can fail with (the errno a BSD call sets).
enum class Errno : uint8_t {
  Ok,
  BadDescriptor,   // EBADF: not an open socket of this host
  AddrInUse,       // EADDRINUSE: another socket of the host is bound to the port
  AlreadyBound,    // EINVAL: bind on a bound socket
  MsgSize,         // EMSGSIZE: more than udp_sendspace (or IP's 65,507 bytes)
  HostUnreach,     // EHOSTUNREACH: not a host of the segment (no ARP entry), or this host
  NoBufs,          // ENOBUFS: the interface queue was full; the datagram (or its rest) was dropped
  BadPort,         // EINVAL: destination port 0 (or listen on port 0)
  // TCP's
  Invalid,         // EINVAL: accept on a socket that is not listening, recv of 0 bytes
  IsConn,          // EISCONN: connect on a socket that is connected (or was)
  NotConn,         // ENOTCONN: send or recv on a socket that is not connected
  Pipe,            // EPIPE: send after this side closed
  ConnRefused,     // ECONNREFUSED: the peer answered the SYN with a RST (nothing listens there)
  ConnReset,       // ECONNRESET: the peer reset the connection
  TimedOut,        // ETIMEDOUT: retransmitted sockets.tcp_max_rexmt times without an answer
};
// A select() timeout BSD takes (itimerfix): none, or 0 to 10^8 s.
inline bool select_timeout_ok(const std::optional<double>& us) { return !us || (*us >= 0 && *us <= 1e14); }

// What a descriptor of a host names: a BSD process's file table holds sockets of either type,
// and select() takes them mixed.
enum class SocketKind : uint8_t { None, Udp, Tcp };

const char* to_string(Errno e);

struct Received {
  uint32_t src_node = 0;
  uint16_t src_port = 0;
  std::vector<uint8_t> data;
};

class InetStack final : public sc_core::sc_module {
 public:
  InetStack(sc_core::sc_module_name name, Calendar& cal, mbcf::EtherSystem& sys, uint32_t node, const SocketConfig& c,
            Stats& st);
  // A UDP/IP stack on every host of `sys`, each its host's child `host<n>.inet`, given the
  // frames of EtherType IPv4 that the hosts' receive routines take.
  static std::vector<std::unique_ptr<InetStack>> attach(Calendar& cal, mbcf::EtherSystem& sys, const SocketConfig& c,
                                                        Stats& st);
  InetStack(const InetStack&) = delete;
  InetStack& operator=(const InetStack&) = delete;

  // --- the socket calls (set-up calls cost nothing: they happen before a measurement)
  // The host's descriptors, one table for its UDP and TCP sockets (its program's file table): a
  // new socket of either kind takes the next number. A number is never given twice (a closed TCP
  // socket's connection may still be in TIME_WAIT under it; BSD's falloc would reuse the lowest
  // free one, and no cost here depends on a descriptor's number).
  int open_descriptor(SocketKind k);
  SocketKind kind_of(int fd) const;       // None: not a descriptor of this host
  int udp_socket();                       // socket(AF_INET, SOCK_DGRAM, 0): a descriptor
  Errno bind(int fd, uint16_t port);      // port 0: the next ephemeral port
  uint16_t port_of(int fd) const;         // 0: unbound (or not a socket)
  // sendto: a system call on the host CPU; `k` gets the outcome when it returns. An unbound
  // socket is bound to an ephemeral port first (as BSD's udp_output does).
  void sendto(int fd, uint32_t dst_node, uint16_t dst_port, std::vector<uint8_t> data, std::function<void(Errno)> k);
  // recvfrom, blocking: sleeps until a datagram is in the socket's receive buffer, then copies
  // it out. (One caller at a time per socket.)
  void recvfrom(int fd, std::function<void(Errno, Received)> k);
  // select() for reading (4.4BSD sys_generic.c) on the host's sockets `fds`, UDP and TCP mixed:
  // the first in `fds`' order that soo_select finds readable (a UDP socket with a datagram
  // waiting; a TCP socket with data, the peer's FIN or an error, or a listening one with a
  // connection to accept); with `timeout_us` at most that long (0: one scan; the expiry on the
  // kernel clock's tick at or after it), then fd -1; without, it blocks (host::Os::select_loop,
  // each descriptor's poll routine on every pass). A descriptor that is not an open socket of
  // the host: EBADF; no descriptors or a timeout itimerfix refuses: EINVAL. Either stack's
  // selwakeup wakes it.
  void select(std::vector<int> fds, std::optional<double> timeout_us, std::function<void(Errno, int)> k);
  void select(std::vector<int> fds, std::function<void(Errno, int)> k) { select(std::move(fds), std::nullopt, std::move(k)); }
  // The channel a process in select() sleeps on (selwakeup's), for both stacks.
  uint64_t select_chan() const { return (static_cast<uint64_t>(node_) << 32) | 0x7fffffffu; }
  // (For tests: no cost.) Datagrams in the socket's receive buffer.
  size_t queued(int fd) const;

  // The driver's receive path for an IPv4 frame: ps of interrupt-level work.
  uint64_t rx_frame(std::vector<uint8_t>&& frame);

  // TCP (tcp.h), the child `tcp` of this module.
  Tcp& tcp() { return *tcp_; }
  // For TCP's segments: ip_output's per-packet work, ether_output and the driver for one frame
  // of `bytes` held in `buffers` mbufs (the header mbuf and the data's), as time on the host CPU.
  uint64_t frame_out_ps(uint64_t bytes, uint32_t buffers) const;
  // The checksum over `bytes` the CPU has in its cache (the send side's, over data it has just
  // copied into mbufs).
  uint64_t cksum_ps(uint64_t bytes) const;
  // The receive side's checksum over the transport's bytes of a frame of `frame_bytes` as the
  // driver took it: the first touch of the frame's data behind the headers ipintr read (the
  // NIC's DMA wrote them), unless the driver copied the frame and so touched it already.
  uint64_t rx_cksum_ps(uint64_t frame_bytes);
  uint16_t next_ip_id() { return ip_id_++; }
  // Hands one built frame to the NIC: false when the interface queue was full (the frame is
  // dropped, as IF_QFULL drops it; TCP's retransmission recovers it).
  bool transmit(std::vector<uint8_t>&& frame, uint32_t dst);

 private:
  // A datagram in a receive buffer, and how many bytes of the frame it came in no CPU has read
  // yet (the NIC's DMA wrote them; 0 once a checksum or the driver's copy touched them):
  // soreceive's copy out pays their first touch.
  struct Queued {
    Received r;
    uint64_t untouched_frame_bytes = 0;
  };
  struct Socket {
    uint16_t port = 0;
    std::deque<Queued> rcv;
    uint32_t rcv_bytes = 0;
    MbufAccount rcv_mb;  // with sockets.mbuf_accounting: the mbufs holding rcv (mbuf_account.h)
  };
  struct Reass {
    mbp2::Reassembly r;
    std::vector<std::vector<uint8_t>> frames;  // by tag
    uint64_t gen = 0;
  };
  Socket* sock(int fd);
  const Socket* sock(int fd) const;
  // soo_select for reading, by the descriptor's kind (the TCP stack answers for its own):
  // whether `fd` is an open socket of this host, and whether it is readable.
  bool select_open(int fd) const;
  bool select_readable(int fd) const;
  bool port_taken(uint16_t port) const;
  uint16_t ephemeral();
  uint64_t cycles(double instr) const { return os_.instr_ps(instr); }
  // ether_output and the driver for one frame of `bytes` in `buffers` mbufs: the driver's copy
  // when it copies every frame (the LANCE's), else each buffer mapped for the NIC's DMA, or with
  // more than sockets.driver_max_maps the frame copied into one buffer first (Sun's FEPS driver).
  uint64_t link_out_ps(uint64_t bytes, uint32_t buffers) const;
  // A place on the interface queue (false, counted as a drop, when it is full), and the frame
  // handed to the NIC from it (the place is freed when the NIC has sent it).
  bool ifq_enter();
  void to_nic(std::vector<uint8_t>&& frame, uint32_t dst);
  // Sends the frames of one datagram, one after another through ether_output and the driver;
  // `chain` holds the mbufs sosend put its data in.
  void output_frames(std::shared_ptr<std::vector<std::vector<uint8_t>>> frames,
                     std::shared_ptr<const std::vector<MbufAccount::Mbuf>> chain, uint32_t dst, size_t i,
                     std::function<void(Errno)> k);
  // The mbufs frame `i` of a datagram in `frames` frames reaches the driver in: udp_output's
  // header mbuf and the data's; a fragment is a fresh header mbuf and one for each mbuf of the
  // datagram its piece spans (4.3BSD-Tahoe's ip_output cuts every fragment with m_copy, which
  // makes one mbuf per mbuf it spans).
  uint32_t udp_frame_buffers(const std::vector<MbufAccount::Mbuf>& chain, size_t i, size_t frames) const;
  // Takes the frames off ipintrq one by one: BSD's netisr, or the rest of the driver's interrupt
  // routine under Solaris (sockets.ip_input).
  void netisr();
  // ipintr and udp_input for one frame taken off ipintrq: their cost, and what they do at its end.
  uint64_t ip_input(std::vector<uint8_t>& frame, std::function<void()>& effect);
  // The cost of udp_input for a datagram as IP hands it up (whole or reassembled): with
  // sockets.udp_cksum and a sender that summed it, the checksum, the first touch of its data.
  uint64_t udp_input_ps(const std::vector<uint8_t>& datagram);
  // Whether udp_input checks the datagram's checksum: sockets.udp_cksum, and the sender summed it.
  bool udp_checks(const std::vector<uint8_t>& datagram) const;
  // `frag_ip_lens`: the IP lengths of the fragments it came in (one: it came whole).
  void udp_input(std::vector<uint8_t>&& datagram, std::vector<uint32_t> frag_ip_lens);
  uint64_t chan(int fd) const { return (static_cast<uint64_t>(node_) << 32) | static_cast<uint32_t>(fd); }

  Calendar& cal_;
  mbcf::EtherSystem& sys_;
  const uint32_t node_;
  const SocketConfig c_;
  host::Os& os_;
  host::Cpu& cpu_;
  std::vector<SocketKind> fds_;                 // the host's descriptors (open_descriptor)
  std::vector<std::unique_ptr<Socket>> socks_;  // by descriptor (null: not a UDP socket)
  uint16_t next_ephemeral_ = 1024;
  uint16_t ip_id_ = 0;
  uint32_t ifq_len_ = 0;  // frames handed to the NIC that have not left it
  std::deque<std::vector<uint8_t>> ipintrq_;
  bool netisr_posted_ = false;
  std::map<std::pair<uint32_t, uint16_t>, Reass> reass_;  // (source, IP id)
  uint64_t reass_gen_ = 0;
  Counter &udp_out_, &frames_out_, &frags_out_, &ifq_drops_, &udp_in_, &frames_in_, &ipintrq_drops_, &reassembled_,
      &reass_timeouts_, &reass_bad_, &bad_, &noport_, &fullsock_, &tx_ps_, &rx_intr_ps_, &netisr_ps_, &rx_ps_, &dvma_maps_,
      &pullups_;
  std::unique_ptr<Tcp> tcp_;
};

}  // namespace mbpsim::sockets
