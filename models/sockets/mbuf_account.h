// The mbuf storage a BSD socket buffer is charged for, as SunOS 4.1.4 counts it (4.3BSD-Tahoe
// derived; sys/socketvar.h, sys/mbuf.h, uipc_socket.c, uipc_socket2.c, sunif/if_le.c):
//   - sbspace(sb) = min(sb_hiwat - sb_cc, sb_mbmax - sb_mbcnt), with sb_mbmax = min(2 x hiwat,
//     SB_MAX = 64 KB) (sbreserve);
//   - sballoc charges every mbuf MSIZE (128) and a cluster mbuf MCLBYTES (1024) more, whatever
//     it holds; sbfree gives the charge back when the mbuf is consumed whole;
//   - sbcompress copies a small mbuf's data into the small mbuf before it when it fits (an mbuf
//     holds MLEN = 112 bytes, from MMINOFF = 12 to MMAXOFF = 124); clusters are never merged;
//   - sosend takes a cluster for the next piece while at least SEND_THRESH = MCLBYTES/2 = 512
//     bytes are left to copy and the space left is as much (and charges the space a whole
//     MCLBYTES), else a small mbuf of up to MLEN; at most SEND_CHUNK = 4 clusters per
//     protocol call; it sleeps while no space is left, or while a write of at least a cluster
//     finds less than a cluster's space and the buffer holds at least one;
//   - the LANCE driver (le_read) loans a received frame's buffer as one cluster-type mbuf when
//     the frame is longer than MLEN, and copies shorter ones into small mbufs (copy_to_mbufs,
//     the first starting ETHER_PRE_PAD = 24 bytes in); TCP strips the 40 bytes of IP and TCP
//     headers in place and sbappends what is left. The SBus FastEthernet card's SunOS driver
//     is assumed to do the same (sockets.driver_rx_copy_max 112; 0 loans every frame up, as
//     its Solaris version does).
// So a 512-byte write costs a send buffer 1152 bytes of mbuf storage (2.25 times its data, more
// than sb_mbmax's factor of 2), and any segment of more than 72 data bytes costs the receiver's
// buffer 1152. UDP's sbappendaddr refuses a datagram whose bytes and 16-byte address exceed
// sbspace, then charges an address mbuf and the datagram's mbufs. Solaris's STREAMS sockets
// count bytes only (sockets.mbuf_accounting false).
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

namespace mbpsim::sockets {

namespace mbuf {
constexpr uint32_t kMsize = 128, kMminoff = 12, kMmaxoff = 124, kMlen = kMmaxoff - kMminoff;  // 112
constexpr uint32_t kMclbytes = 1024, kSendThresh = kMclbytes / 2, kSendChunk = kMclbytes * 4;
constexpr uint32_t kSbMax = 64 * 1024, kEtherPrePad = 24, kTcpIpHdr = 40, kUdpIpHdr = 28, kSockaddr = 16;
}  // namespace mbuf

// The mbufs of one socket buffer, front to back, with what they are charged (sb_mbcnt).
class MbufAccount {
 public:
  struct Mbuf {
    uint32_t off = mbuf::kMminoff;  // where a small mbuf's data starts (sbcompress needs it)
    uint32_t len = 0;
    bool cluster = false;
  };
  explicit MbufAccount(uint32_t hiwat = 0) : mbmax_(std::min(2 * hiwat, mbuf::kSbMax)) {}

  uint32_t mbcnt() const { return mbcnt_; }
  uint32_t mbmax() const { return mbmax_; }
  // sbspace's second term; negative when the storage is over-committed (sbappend never refuses
  // data the window let in).
  int64_t room() const { return static_cast<int64_t>(mbmax_) - mbcnt_; }

  // sbappend of a chain: sbcompress into the last small mbuf where it fits, sballoc the rest.
  // `new_record`: the chain's first mbuf starts a record (sbappendaddr's address mbuf), which
  // is never packed into the record before.
  void append(const std::vector<Mbuf>& chain, bool new_record = false) {
    bool first = true;
    for (const Mbuf& m : chain) {
      if (m.len == 0) continue;
      const bool may_pack = !(first && new_record);
      first = false;
      if (may_pack && !q_.empty()) {
        Mbuf& n = q_.back();
        if (!n.cluster && !m.cluster && n.off + n.len + m.len <= mbuf::kMmaxoff) {
          n.len += m.len;
          continue;
        }
      }
      q_.push_back(m);
      mbcnt_ += charge(m);
    }
  }
  // sbdrop from the front (acknowledged data, or what soreceive copied out): an mbuf consumed
  // whole is freed with its charge; a part only shortens it.
  void drop(uint64_t n) {
    while (n > 0 && !q_.empty()) {
      Mbuf& m = q_.front();
      if (n < m.len) {
        m.len -= static_cast<uint32_t>(n);
        m.off += static_cast<uint32_t>(n);
        return;
      }
      n -= m.len;
      mbcnt_ -= charge(m);
      q_.pop_front();
    }
  }
  // How many mbufs the first `n` bytes from the front lie in (soreceive's loop visits each).
  uint32_t span(uint64_t n) const {
    uint32_t k = 0;
    for (const Mbuf& m : q_) {
      if (n == 0) break;
      ++k;
      n -= std::min<uint64_t>(n, m.len);
    }
    return k;
  }
  // How many mbufs the `n` bytes from `off` on lie in (tcp_output's m_copy of a segment's data
  // makes one mbuf for each).
  uint32_t span(uint64_t off, uint64_t n) const { return span_of(q_, off, n); }
  // The same over any chain of mbufs, front to back (a datagram's, for ip_output's fragments).
  template <class Chain>
  static uint32_t span_of(const Chain& chain, uint64_t off, uint64_t n) {
    if (n == 0) return 0;
    uint32_t k = 0;
    uint64_t at = 0;
    for (const Mbuf& m : chain) {
      if (at >= off + n) break;
      if (m.len > 0 && at + m.len > off) ++k;
      at += m.len;
    }
    return k;
  }
  void clear() {
    q_.clear();
    mbcnt_ = 0;
  }

  // sosend's mbufs for what is left of a write (`resid`) with `space` of the send buffer left
  // (sbspace, already capped at SEND_CHUNK): the chain, and in `taken` the bytes it holds.
  static std::vector<Mbuf> sosend_chain(uint64_t resid, int64_t space, uint32_t& taken) {
    std::vector<Mbuf> out;
    taken = 0;
    while (space > 0 && resid > 0) {
      Mbuf m;
      if (resid >= mbuf::kSendThresh && space >= mbuf::kSendThresh) {
        m.cluster = true;
        m.len = static_cast<uint32_t>(std::min<uint64_t>(mbuf::kMclbytes, resid));
        space -= mbuf::kMclbytes;
      } else {
        m.len = static_cast<uint32_t>(std::min<uint64_t>(std::min<uint64_t>(mbuf::kMlen, resid), static_cast<uint64_t>(space)));
        space -= m.len;
      }
      resid -= m.len;
      taken += m.len;
      out.push_back(m);
    }
    return out;
  }
  // The data of a received frame as the driver hands it up and TCP or UDP appends it: `ip_len`
  // is the IP packet's length, `data` its data bytes after `hdr` bytes of IP and transport
  // headers. A packet of more than `copy_max` bytes (sockets.driver_rx_copy_max, at most MLEN)
  // comes up in the driver's loaned receive buffer, one cluster-type mbuf; a shorter one is
  // copied into small mbufs as le_read's copy_to_mbufs does.
  static std::vector<Mbuf> rx_chain(uint32_t ip_len, uint32_t data, uint32_t copy_max, uint32_t hdr = mbuf::kTcpIpHdr) {
    if (data == 0) return {};
    if (ip_len > copy_max) return {Mbuf{mbuf::kMminoff, data, true}};  // the loaned receive buffer
    // copy_to_mbufs: the first mbuf from ETHER_PRE_PAD on, the rest in a second; the headers
    // are stripped from the front of the first.
    const uint32_t first = std::min(ip_len, mbuf::kMlen - mbuf::kEtherPrePad);
    std::vector<Mbuf> out;
    const uint32_t in_first = std::min(data, first > hdr ? first - hdr : 0);
    if (in_first) out.push_back(Mbuf{mbuf::kMminoff + mbuf::kEtherPrePad + hdr, in_first, false});
    if (data > in_first) out.push_back(Mbuf{mbuf::kMminoff, data - in_first, false});
    return out;
  }

 private:
  static uint32_t charge(const Mbuf& m) { return mbuf::kMsize + (m.cluster ? mbuf::kMclbytes : 0); }
  uint32_t mbmax_ = 0;
  uint32_t mbcnt_ = 0;
  std::deque<Mbuf> q_;
};

}  // namespace mbpsim::sockets
