! Input checked on every rank, as a DFT code checks its input (check_namelist_read): the I/O rank reads a namelist
! once, then every step checks the step's parameters, and a routine broadcasts the status and the line at fault,
! which is written only when the check failed.  On good input the line is never written, and the whole
! CHARACTER(512) local is broadcast as the stack left it after the routines called before (natively harmless: the
! other ranks look at it only when the status says the check failed).

program namelist_check
  use mpi
  implicit none
  integer :: ierr, rank, ios, step, nat
  double precision :: ecut, energy
  character(len=80) :: text
  double precision, external :: setup_energy
  namelist /system/ nat, ecut
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  nat = 4
  ecut = 25.0d0
  ios = 0
  text = '&system nat=4, ecut=30.0 /'
  if (rank == 0) read(text, nml=system, iostat=ios)
  call MPI_Bcast(nat, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(ecut, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  energy = 0
  do step = 1, 5
    energy = energy + setup_energy(nat * step) * ecut
    ios = 0
    if (rank == 0 .and. nat * step > 64) then
      ios = 1
      write(text, '(A,I0)') 'nat=', nat * step
    end if
    call check_input(ios, text, 'system')
  end do
  print '(A,I0,A,F14.4)', 'r', rank, ': energy ', energy
  call MPI_Finalize(ierr)
end program

subroutine check_input(ios, text, what)
  use mpi
  implicit none
  integer, intent(in) :: ios
  character(len=*), intent(in) :: text, what
  character(len=512) :: line
  integer :: rank, status, ierr
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  status = ios
  if (rank == 0 .and. ios /= 0) line = text
  call MPI_Bcast(status, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(line, 512, MPI_CHARACTER, 0, MPI_COMM_WORLD, ierr)
  if (status /= 0) then
    print '(A,A,A,A)', 'bad input ', what, ': ', trim(line)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
end subroutine

double precision function setup_energy(nat)
  use mpi
  implicit none
  integer, intent(in) :: nat
  double precision :: pos(3, 64), total
  integer :: ierr, i
  do i = 1, nat
    pos(:, i) = [0.1d0 * i, 0.2d0 * i, 0.3d0 * i]
  end do
  call MPI_Allreduce(sum(pos(:, 1:nat)), total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  setup_energy = total
end function
